# SPDX-License-Identifier: GPL-2.0
#
# The one-guest job of hostile input, in a guest booted with slab
# debugging (slub_debug=FZPU: red zones, poisoning, consistency checks),
# so that a write to freed or foreign memory is caught where it happens:
# a seeded ioctl fuzzer (fuzz-single.sh), a rogue exporter speaking
# rpage's protocol over rdma-core (rogue-single.sh) and a device that
# keeps work requests past their flush (kept-single.sh); and strangers and
# hostile peers over TCP (guard-single.sh).
. "$RPAGE_REPO/selftests/guest/lib.sh"

rxe_up || echo "rxe setup failed"

# A part that is missing leaves its stream missing: the host fails the
# run for it (selftests/run.sh).
for part in fuzz-single.sh rogue-single.sh kept-single.sh guard-single.sh; do
	. "$RPAGE_REPO/selftests/guest/$part"
done

exit 0
