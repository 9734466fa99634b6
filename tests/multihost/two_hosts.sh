#!/usr/bin/env bash
# two_hosts.sh PYTHON MPIEXEC KPMAP DECK WORKDIR [KPMAP_ARGS...]
#
# Runs DECK on 2 ranks twice: on this host (plain mpiexec), then across two hosts made on this
# machine: two network namespaces joined by a veth pair, one rank in each, MPICH's hydra launching
# the remote proxy through netns_launcher.sh (where a cluster uses ssh) and UCX limited to TCP on
# the veth. check_two_hosts.py then requires the same loss history bit for bit and the
# collectives' bytes on the veth's counters. Exits 77 (ctest SKIP_RETURN_CODE) where it cannot
# run: not root, no iproute2, no network namespaces or veth, or an mpiexec that is not hydra.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=$1 mpiexec=$2 kpmap=$3 deck=$4 work=$5
shift 5

skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "creating network namespaces needs root (ip netns add)"
command -v ip >/dev/null || skip "no 'ip' command (Debian package iproute2)"
# grep reads all of the output: with -q it could exit first, and mpiexec's SIGPIPE would fail the
# pipeline under pipefail and skip the test.
"$mpiexec" --version 2>/dev/null | grep HYDRA >/dev/null || skip "$mpiexec is not MPICH's hydra (-launcher-exec)"

# Names unique to this run; one interface name, kpmap0, inside both namespaces, so that one
# UCX_NET_DEVICES serves both ranks. TEST-NET-1 addresses (RFC 5737) exist only in the namespaces.
id=$$
ns_a=kpmap-mh-$id-a ns_b=kpmap-mh-$id-b veth=kpm${id} dev=kpmap0
addr_a=192.0.2.1 addr_b=192.0.2.2
cleanup() {
  ip link del "${veth}a" 2>/dev/null || true # still in this namespace if a move failed
  for ns in $ns_a $ns_b; do
    [ -e "/run/netns/$ns" ] || continue
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -z "$pids" ] || kill $pids 2>/dev/null || true
    ip netns del "$ns"
  done
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

for ns in $ns_a $ns_b; do
  err=$(ip netns add "$ns" 2>&1) || skip "cannot create a network namespace: $err"
done
err=$(ip link add "${veth}a" type veth peer name "${veth}b" 2>&1) || skip "cannot create a veth pair: $err"
ip link set "${veth}a" netns "$ns_a" name $dev
ip link set "${veth}b" netns "$ns_b" name $dev
ip -n "$ns_a" addr add $addr_a/24 dev $dev
ip -n "$ns_b" addr add $addr_b/24 dev $dev
for ns in $ns_a $ns_b; do
  ip -n "$ns" link set lo up
  ip -n "$ns" link set $dev up
done
tx_bytes() { ip netns exec "$1" cat /sys/class/net/$dev/statistics/tx_bytes; }

echo "== one host: $mpiexec -n 2"
timeout -k 5 60 "$mpiexec" -n 2 "$kpmap" "$deck" "$@" --output "$work/one_host.json"

echo "== two hosts: $addr_a in $ns_a (rank 0, mpiexec), $addr_b in $ns_b (rank 1), TCP over $dev"
tx_a=$(tx_bytes "$ns_a") tx_b=$(tx_bytes "$ns_b")
# UCX_TLS=tcp: without it UCX joins two processes of one machine through shared memory even
# across network namespaces, and the veth carries only hydra's control traffic.
KPMAP_NETNS_HOSTS="$addr_a=$ns_a $addr_b=$ns_b" UCX_TLS=tcp UCX_NET_DEVICES=$dev \
  timeout -k 5 90 ip netns exec "$ns_a" "$mpiexec" -launcher rsh -launcher-exec "$here/netns_launcher.sh" \
  -iface $dev -hosts $addr_a,$addr_b -ppn 1 -n 2 "$kpmap" "$deck" "$@" --output "$work/two_hosts.json"
tx_a=$(($(tx_bytes "$ns_a") - tx_a)) tx_b=$(($(tx_bytes "$ns_b") - tx_b))

"$python" "$here/check_two_hosts.py" "$work/one_host.json" "$work/two_hosts.json" $tx_a $tx_b
