#!/bin/sh
# SPDX-License-Identifier: MIT
# The package on a fresh Debian 12, then in an unprivileged container, by hand (root,
# network to a Debian mirror, podman and runc; minutes). Steps:
#  1. scripts/package.sh from a clean clone of this tree;
#  2. debootstrap a minbase bookworm root in WORK/root (kept for the next run) and install
#     the package there with apt (its Recommends: ibverbs-utils, rdmacm-utils) and man-db;
#     as a user of that root: netdirect-run ibv_devinfo, nd_info, man netdirect, and the
#     system's libibverbs1/librdmacm1 verified untouched (dpkg --verify);
#  3. that root imported as a podman image; rping -V server and client run inside it as a
#     non-root user with no capabilities, under a seccomp profile like Docker's default
#     (podman's, with pidfd_getfd refused EPERM); both logs must say the connections took shm.
# Usage: scripts/container_check.sh [WORK]   (default /var/tmp/nd-pkg)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/var/tmp/nd-pkg}
root=$work/root
mkdir -p "$work"
rm -rf "$work/clone"
git clone -q "$top" "$work/clone"
deb=$("$work/clone/scripts/package.sh" | tail -1)
echo "1. package: $deb"

[ -x "$root/bin/sh" ] || debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian > "$work/debootstrap.log"
cp "$deb" "$root/tmp/netdirect.deb"
cp /etc/resolv.conf "$root/etc/resolv.conf"
chroot "$root" sh -c 'apt-get update -q > /tmp/update.log 2>&1 &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q /tmp/netdirect.deb man-db > /tmp/install.log 2>&1' ||
    { tail "$root/tmp/install.log"; exit 1; }
mount -t proc proc "$root/proc"      # netdirect-run finds its libraries through /proc/self/exe
trap 'umount "$root/proc" 2> /dev/null' EXIT
chroot "$root" sh -c 'id tester > /dev/null 2>&1 || useradd -m tester'
chroot "$root" su tester -c 'netdirect-run ibv_devinfo | grep -q "hca_id:.*nd0" && nd_info | grep -q "^transports" &&
    MANPAGER=cat man netdirect | grep -q "^NAME"' || { echo "the installed package does not work"; exit 1; }
chroot "$root" dpkg --verify libibverbs1 librdmacm1 || { echo "the system's verbs libraries changed"; exit 1; }
umount "$root/proc"
echo "2. installed on a fresh Debian 12 root: ibv_devinfo shows nd0, nd_info and man netdirect work"

cat > "$work/pair.sh" << 'EOF'
#!/bin/sh
export ND_LOG=cm:info
grep -E "^(CapEff|Seccomp):" /proc/self/status
nd_info | sed -n '/^transports/,/iwarp:/p'
netdirect-run rping -s -a 127.0.0.1 -p 7999 -C 1000 -V -S 4096 > /tmp/s.log 2>&1 &
server=$!
i=0
until grep -q ":1F3F " /proc/net/tcp 2> /dev/null || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
netdirect-run rping -c -a 127.0.0.1 -p 7999 -C 1000 -V -S 4096 > /tmp/c.log 2>&1 || exit 1
wait $server || exit 1
for f in /tmp/s.log /tmp/c.log; do
    grep -q "take shm" "$f" && ! grep -q "take iwarp" "$f" || { cat "$f"; exit 1; }
done
echo "rping -V x1000 between two processes of the container: both took shm"
EOF
chmod 755 "$work/pair.sh"
python3 - "$work/seccomp.json" << 'EOF'
import json, sys
d = json.load(open('/usr/share/containers/seccomp.json'))
d['defaultErrnoRet'] = 1
for s in d['syscalls']:
    if 'pidfd_getfd' in s.get('names', []):
        s['names'].remove('pidfd_getfd')
json.dump(d, open(sys.argv[1], 'w'))
EOF
tar -C "$root" -c . | podman import - localhost/netdirect-check:latest > /dev/null
# runc: this host's hybrid cgroups are refused by crun; rlimits below the host's hard ones.
podman --runtime runc run --rm --user tester --security-opt seccomp="$work/seccomp.json" \
    --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 -v "$work/pair.sh:/pair.sh:ro" \
    localhost/netdirect-check:latest /pair.sh
echo "3. in an unprivileged container with pidfd_getfd refused: shm"
