# SPDX-License-Identifier: GPL-2.0
#
# The demo's job on each host: bring up rxe, load rpage.ko, show what
# rpage sees, and prove the RDMA link between the hosts with rping.
. "$RPAGE_REPO/selftests/guest/lib.sh"
set -e

step() {
	echo "\$ $*"
	"$@"
}

rxe_up
rpage_load
echo "host $RPAGE_NODE: $(uname -r), $RPAGE_IP"
step rpagectl version
step rpagectl device show
barrier loaded

if [ "$RPAGE_NODE" = a ]; then
	rping -s -a "$RPAGE_IP" -C 3 > /dev/null 2>&1 &
	sleep 2
	barrier listening
	wait $!
	echo "rping server: 3 RDMA ping-pongs served to host B"
else
	barrier listening
	step rping -c -a "$RPAGE_PEER_IP" -C 3 -v
fi
barrier done
step rpagectl -j -p version
rpage_unload
echo "host $RPAGE_NODE: rpage.ko unloaded"
