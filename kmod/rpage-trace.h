/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpage: tracepoints of the fault path and of the RDMA transfers under it,
 * for perf and bpftrace (events/rpage/ in tracefs).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rpage

#if !defined(RPAGE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RPAGE_TRACE_H

#include <linux/tracepoint.h>

/* How a fault ended: enum rpage_fault_result, by name in the output. */
TRACE_DEFINE_ENUM(RPAGE_FAULT_FETCHED);
TRACE_DEFINE_ENUM(RPAGE_FAULT_MINOR);
TRACE_DEFINE_ENUM(RPAGE_FAULT_WAITED);
TRACE_DEFINE_ENUM(RPAGE_FAULT_SIGBUS);
TRACE_DEFINE_ENUM(RPAGE_FAULT_RETRY);

TRACE_EVENT(rpage_fault_begin,
	    TP_PROTO(u32 map_id, unsigned long index, unsigned long address,
		     bool write),
	    TP_ARGS(map_id, index, address, write),
	    TP_STRUCT__entry(__field(u32, map_id)
			     __field(bool, write)
			     __field(unsigned long, index)
			     __field(unsigned long, address)),
	    TP_fast_assign(__entry->map_id = map_id;
			   __entry->write = write;
			   __entry->index = index;
			   __entry->address = address;),
	    TP_printk("map=%u index=%lu address=%#lx %s", __entry->map_id,
		      __entry->index, __entry->address,
		      __entry->write ? "write" : "read")
);

/*
 * How a fault ended, its errno if it failed (or was retried after a
 * failure), and its time in rpage.
 */
TRACE_EVENT(rpage_fault_end,
	    TP_PROTO(u32 map_id, unsigned long index, int result, int err,
		     u64 ns),
	    TP_ARGS(map_id, index, result, err, ns),
	    TP_STRUCT__entry(__field(u32, map_id)
			     __field(int, result)
			     __field(int, err)
			     __field(unsigned long, index)
			     __field(u64, ns)),
	    TP_fast_assign(__entry->map_id = map_id;
			   __entry->result = result;
			   __entry->err = err;
			   __entry->index = index;
			   __entry->ns = ns;),
	    TP_printk("map=%u index=%lu %s err=%d ns=%llu", __entry->map_id,
		      __entry->index,
		      __print_symbolic(__entry->result,
				       { RPAGE_FAULT_FETCHED, "fetched" },
				       { RPAGE_FAULT_MINOR, "minor" },
				       { RPAGE_FAULT_WAITED, "waited" },
				       { RPAGE_FAULT_SIGBUS, "sigbus" },
				       { RPAGE_FAULT_RETRY, "retry" }),
		      __entry->err, __entry->ns)
);

/* Why a 2 MiB mapping read 4 KiB: RPAGE_HUGE_FB_* of the UAPI header. */
TRACE_DEFINE_ENUM(RPAGE_HUGE_FB_TAIL);
TRACE_DEFINE_ENUM(RPAGE_HUGE_FB_DISABLED);
TRACE_DEFINE_ENUM(RPAGE_HUGE_FB_UNALIGNED);
TRACE_DEFINE_ENUM(RPAGE_HUGE_FB_PTE_TABLE);
TRACE_DEFINE_ENUM(RPAGE_HUGE_FB_SMALL_CACHED);
TRACE_DEFINE_ENUM(RPAGE_HUGE_FB_NOMEM);

TRACE_EVENT(rpage_huge_fallback,
	    TP_PROTO(u32 map_id, unsigned long index, int cause),
	    TP_ARGS(map_id, index, cause),
	    TP_STRUCT__entry(__field(u32, map_id)
			     __field(int, cause)
			     __field(unsigned long, index)),
	    TP_fast_assign(__entry->map_id = map_id;
			   __entry->cause = cause;
			   __entry->index = index;),
	    TP_printk("map=%u index=%lu %s", __entry->map_id, __entry->index,
		      __print_symbolic(__entry->cause,
				       { RPAGE_HUGE_FB_TAIL, "tail" },
				       { RPAGE_HUGE_FB_DISABLED, "disabled" },
				       { RPAGE_HUGE_FB_UNALIGNED, "unaligned" },
				       { RPAGE_HUGE_FB_PTE_TABLE, "pte_table" },
				       { RPAGE_HUGE_FB_SMALL_CACHED, "small_cached" },
				       { RPAGE_HUGE_FB_NOMEM, "nomem" }))
);

TRACE_EVENT(rpage_io_post,
	    TP_PROTO(u32 peer_id, u32 qp_num, bool write, u64 remote_addr,
		     unsigned int count),
	    TP_ARGS(peer_id, qp_num, write, remote_addr, count),
	    TP_STRUCT__entry(__field(u32, peer_id)
			     __field(u32, qp_num)
			     __field(u64, remote_addr)
			     __field(unsigned int, count)
			     __field(bool, write)),
	    TP_fast_assign(__entry->peer_id = peer_id;
			   __entry->qp_num = qp_num;
			   __entry->remote_addr = remote_addr;
			   __entry->count = count;
			   __entry->write = write;),
	    TP_printk("peer=%u qp=%u %s count=%u first=%#llx",
		      __entry->peer_id, __entry->qp_num,
		      __entry->write ? "WRITE" : "READ", __entry->count,
		      __entry->remote_addr)
);

TRACE_EVENT(rpage_io_done,
	    TP_PROTO(u32 peer_id, u32 qp_num, bool write, unsigned int pages,
		     int status, u64 ns),
	    TP_ARGS(peer_id, qp_num, write, pages, status, ns),
	    TP_STRUCT__entry(__field(u32, peer_id)
			     __field(u32, qp_num)
			     __field(u64, ns)
			     __field(unsigned int, pages)
			     __field(int, status)
			     __field(bool, write)),
	    TP_fast_assign(__entry->peer_id = peer_id;
			   __entry->qp_num = qp_num;
			   __entry->ns = ns;
			   __entry->pages = pages;
			   __entry->status = status;
			   __entry->write = write;),
	    TP_printk("peer=%u qp=%u %s pages=%u status=%d ns=%llu",
		      __entry->peer_id, __entry->qp_num,
		      __entry->write ? "WRITE" : "READ", __entry->pages,
		      __entry->status, __entry->ns)
);

#endif /* RPAGE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE rpage-trace
#include <trace/define_trace.h>
