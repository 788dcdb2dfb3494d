# SPDX-License-Identifier: GPL-2.0
#
# The page-fault demo (make demo-faults), on each host. Host A exports
# 64 MiB of a process's memory filled with a known pattern; host B maps
# it, touches every page from four threads in a random order - each
# first touch a page fault that rpage.ko serves with an RDMA READ from
# A - checks every byte, and shows the fault-latency percentiles.
. "$RPAGE_REPO/selftests/guest/lib.sh"
set -e

PATTERN=$SELFTESTS/rpage_pattern
FAULT=$SELFTESTS/rpage_fault
PEER=$RPAGE_PEER_NODE

pool_announced() {
	"$RPAGECTL" -j pool show remote | jq -e 'any(.[]; .peer == "a" and .id == 1)'
}

rxe_up
rpage_load
echo "host $RPAGE_NODE: $(uname -r), $RPAGE_IP"
step rpagectl version
step rpagectl device show
step rpagectl endpoint add "$RPAGE_IP"
step rpagectl peer add "$PEER" addr "$RPAGE_PEER_IP"
wait_until 90 peer_is "$PEER" connected
step rpagectl peer show

if [ "$RPAGE_NODE" = a ]; then
	echo "\$ rpage_pattern export 1 64M &   # 64 MiB of this process, pinned"
	"$PATTERN" export 1 64M --ready /tmp/ready --until /tmp/until > /tmp/export.out &
	wait_until 30 test -e /tmp/ready
	step rpagectl pool show
	barrier exported
	barrier touched
	touch /tmp/until
	wait
else
	barrier exported
	wait_until 60 pool_announced
	step rpagectl pool show remote
	echo "\$ rpage_fault touch a 1 64M --threads 4 --order random"
	"$FAULT" touch a 1 64M --threads 4 --order random --expect-faults 16384
	step rpagectl stat peer a
	barrier touched
fi
barrier done
rpage_unload
echo "host $RPAGE_NODE: rpage.ko unloaded"
