// SPDX-License-Identifier: GPL-2.0
/*
 * rpage_hold_test: holds one of rpage's access sections open, for rpage's
 * selftests (built with them, never installed).
 *
 * A transport that copies a pool's pages (the loop's copy, TCP's answer)
 * looks the pool up and takes its page inside an access section
 * (rpage_pool_access_begin()), and a pool's destroy promises not to
 * return before every section that may have found the pool has ended:
 * only then may it free the pages. A section lasts microseconds, so no
 * test from user space can be inside one when a destroy begins; this
 * module makes one last: armed, it holds the next call of
 * rpage_pool_page() by a task of a given name (the page lookup every
 * transport makes inside its section) for a given time before the call
 * goes on.
 *
 * And it counts what a destroy must not do meanwhile: let go of a process
 * pool's pages (unpin_user_pages_dirty_lock()) while a call is held.
 *
 * Its parameters (/sys/module/rpage_hold_test/parameters/):
 *   comm      the name, or the start of the name, of the task whose
 *             call is held: "rpagectl", or "kworker/" for TCP's
 *             receive work
 *   hold_ms   written: arms the next hold for that long (ms, at most
 *             10000); read: what is armed (0 once the hold has begun)
 *   holding   1 while a call is being held
 *   holds     how many calls were held
 *   unpinned_in_hold
 *             how many times pages were unpinned during a hold
 *
 * The hold runs in the probe's handler: a busy wait with preemption
 * disabled, on the task's own CPU; keep it to seconds.
 */
#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/string.h>

#define RPAGE_HOLD_MAX_MS	10000

static char hold_comm[TASK_COMM_LEN] = "rpagectl";

static atomic_t hold_armed_ms = ATOMIC_INIT(0);
static atomic_t hold_holding = ATOMIC_INIT(0);
static atomic_t hold_held = ATOMIC_INIT(0);
static atomic_t hold_unpinned = ATOMIC_INIT(0);

static int rpage_hold_ms_set(const char *val, const struct kernel_param *kp)
{
	unsigned int ms;
	int ret = kstrtouint(val, 0, &ms);

	if (ret)
		return ret;
	if (ms > RPAGE_HOLD_MAX_MS)
		return -ERANGE;
	atomic_set(&hold_armed_ms, ms);
	return 0;
}

/* A name written with echo comes with its newline: not part of it. */
static int rpage_hold_comm_set(const char *val, const struct kernel_param *kp)
{
	size_t len = strcspn(val, "\n");

	if (!len || len >= sizeof(hold_comm))
		return -EINVAL;
	memcpy(hold_comm, val, len);
	hold_comm[len] = '\0';
	return 0;
}

static int rpage_hold_comm_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", hold_comm);
}

static int rpage_hold_atomic_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(kp->arg));
}

static const struct kernel_param_ops rpage_hold_comm_ops = {
	.set	= rpage_hold_comm_set,
	.get	= rpage_hold_comm_get,
};

static const struct kernel_param_ops rpage_hold_ms_ops = {
	.set	= rpage_hold_ms_set,
	.get	= rpage_hold_atomic_get,
};

static const struct kernel_param_ops rpage_hold_count_ops = {
	.get	= rpage_hold_atomic_get,
};

module_param_cb(comm, &rpage_hold_comm_ops, NULL, 0600);
MODULE_PARM_DESC(comm, "the name of the task whose call is held");
module_param_cb(hold_ms, &rpage_hold_ms_ops, &hold_armed_ms, 0600);
MODULE_PARM_DESC(hold_ms, "arms the next hold for this long (ms)");
module_param_cb(holding, &rpage_hold_count_ops, &hold_holding, 0400);
MODULE_PARM_DESC(holding, "1 while a call is being held");
module_param_cb(holds, &rpage_hold_count_ops, &hold_held, 0400);
MODULE_PARM_DESC(holds, "how many calls were held");
module_param_cb(unpinned_in_hold, &rpage_hold_count_ops, &hold_unpinned, 0400);
MODULE_PARM_DESC(unpinned_in_hold, "how many times pages were unpinned during a hold");

static int rpage_hold_pre(struct kprobe *p, struct pt_regs *regs)
{
	int ms;

	/* Name first: another task's call must not take the one hold. */
	if (strncmp(current->comm, hold_comm, strlen(hold_comm)))
		return 0;
	ms = atomic_xchg(&hold_armed_ms, 0);
	if (!ms)
		return 0;
	atomic_set(&hold_holding, 1);
	mdelay(ms);
	atomic_set(&hold_holding, 0);
	atomic_inc(&hold_held);
	return 0;
}

static int rpage_hold_unpin_pre(struct kprobe *p, struct pt_regs *regs)
{
	if (atomic_read(&hold_holding))
		atomic_inc(&hold_unpinned);
	return 0;
}

static struct kprobe rpage_hold_probe = {
	.symbol_name	= "rpage_pool_page",
	.pre_handler	= rpage_hold_pre,
};

static struct kprobe rpage_hold_unpin_probe = {
	.symbol_name	= "unpin_user_pages_dirty_lock",
	.pre_handler	= rpage_hold_unpin_pre,
};

static struct kprobe *rpage_hold_probes[] = {
	&rpage_hold_probe,
	&rpage_hold_unpin_probe,
};

static int __init rpage_hold_init(void)
{
	/* rpage.ko must be loaded: the probe is on one of its functions. */
	return register_kprobes(rpage_hold_probes,
				ARRAY_SIZE(rpage_hold_probes));
}

static void __exit rpage_hold_exit(void)
{
	unregister_kprobes(rpage_hold_probes, ARRAY_SIZE(rpage_hold_probes));
}

module_init(rpage_hold_init);
module_exit(rpage_hold_exit);

MODULE_DESCRIPTION("rpage selftests: an access section held open");
MODULE_LICENSE("GPL");
