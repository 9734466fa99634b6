#!/bin/sh
# netns_launcher.sh HOST COMMAND...: MPICH hydra's launcher for "hosts" that are network namespaces
# on this machine, used instead of ssh: mpiexec -launcher rsh -launcher-exec netns_launcher.sh.
# KPMAP_NETNS_HOSTS maps each host address to its namespace ("192.0.2.1=ns-a 192.0.2.2=ns-b").
# Hydra hands the proxy's command line as words meant for a remote shell (quoted), hence sh -c.
host=$1
shift
ns=
for entry in $KPMAP_NETNS_HOSTS; do
  [ "${entry%%=*}" = "$host" ] && ns=${entry#*=}
done
if [ -z "$ns" ]; then
  echo "netns_launcher.sh: host '$host' is not in KPMAP_NETNS_HOSTS ('$KPMAP_NETNS_HOSTS')" >&2
  exit 2
fi
exec ip netns exec "$ns" sh -c "$*"
