# SPDX-License-Identifier: MIT
# Sourced by the namespace tests: two network namespaces joined by a veth pair,
# 198.51.100.1 in "$ns_a" and 198.51.100.2 in "$ns_b", removed again when the script exits.
# Exits 77 (skip) where namespaces cannot be made (not root, no iproute2).
[ "$(id -u)" = 0 ] || { echo "needs root for network namespaces"; exit 77; }
command -v ip > /dev/null || { echo "needs ip (iproute2)"; exit 77; }
ns_a=nda$$ ns_b=ndb$$
netns_cleanup() {
    ip netns del "$ns_a" 2> /dev/null
    ip netns del "$ns_b" 2> /dev/null
}
trap netns_cleanup EXIT
trap 'exit 1' INT TERM
ip netns add "$ns_a" && ip netns add "$ns_b" || { echo "cannot create network namespaces"; exit 77; }
ip link add va$$ netns "$ns_a" type veth peer name vb$$ netns "$ns_b" || { echo "cannot create a veth pair"; exit 77; }
ip -n "$ns_a" addr add 198.51.100.1/24 dev va$$ &&
ip -n "$ns_b" addr add 198.51.100.2/24 dev vb$$ &&
ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up &&
ip -n "$ns_a" link set va$$ up && ip -n "$ns_b" link set vb$$ up || exit 1

# netns_mpi_agent FILE: mpirun's remote shell (OMPI_MCA_plm_rsh_agent) for the two
# namespaces: the host it is asked for (an address) names the namespace to run in, under a
# host name of its own (hosta, hostb).
netns_mpi_agent() {
    cat > "$1" << AGENT
#!/bin/sh
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
host=\$1
shift
case \$host in
198.51.100.1) ns=$ns_a name=hosta ;;
198.51.100.2) ns=$ns_b name=hostb ;;
*) echo "agent: no host \$host" >&2; exit 1 ;;
esac
exec ip netns exec \$ns unshare -u sh -c "hostname \$name && \$*"
AGENT
    chmod +x "$1"
}
