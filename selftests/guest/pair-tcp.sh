# SPDX-License-Identifier: GPL-2.0
#
# The two-guest job over TCP: the same hosts as pair.sh, with no RDMA
# device at all, so that every connection between them, and each host's
# connections to itself, are TCP's (chosen automatically). The pool,
# read, write, fault, prefetch, eviction, destroy and ride-through tests
# of pair.sh run over it; what only RDMA has (rxe's removal, RoCE's
# acknowledgments, rdma-core's rogue initiators) does not.
PAIR_TRANSPORT=tcp
. "$RPAGE_REPO/selftests/guest/pair.sh"
