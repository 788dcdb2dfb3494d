# SPDX-License-Identifier: GPL-2.0
#
# The demo's job on each host (make demo): a VM running on host A moves
# to host B without its memory. A runs stock QEMU with a small guest
# whose RAM is a tmpfs file and exports that file as a pool; B maps the
# pool by name (/dev/rpage-map/vm), starts QEMU on it, moves the VM's
# device state over with x-ignore-shared and runs it: each first touch
# of a page by the VM is a page fault rpage.ko serves with an RDMA READ
# from A. B pulls the rest, A lets go of its pool and QEMU, B forgets
# peer a, and the VM goes on checking its memory on B
# (selftests/guest/vmmove.sh).
. "$RPAGE_REPO/selftests/guest/lib.sh"
. "$RPAGE_REPO/selftests/guest/vmmove.sh"

PEER=$RPAGE_PEER_NODE
VM_FORGET_PEER=1

rxe_up
rpage_load || exit 1
echo "host $RPAGE_NODE: $(uname -r), $RPAGE_IP"
step "$RPAGECTL" version
step "$RPAGECTL" endpoint add "$RPAGE_IP" || exit 1
step "$RPAGECTL" peer add "$PEER" addr "$RPAGE_PEER_IP" || exit 1
wait_until 90 peer_is "$PEER" connected || exit 1
step "$RPAGECTL" peer show
barrier connected || exit 1

if [ "$RPAGE_NODE" = a ]; then
	test_vm_move_a
else
	test_vm_move_b
fi
rc=$?
[ "$rc" = 0 ] && echo "host $RPAGE_NODE: done" || echo "host $RPAGE_NODE: FAILED"
barrier done
rpage_unload
exit "$rc"
