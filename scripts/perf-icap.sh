#!/usr/bin/env bash
# One "Squid + ICAP service" peer for scripts/perf.sh --icap: starts the ICAP server, waits for
# its port, then runs Squid in front of it (no cache: every response goes through ICAP), both in
# this process tree, and stops both when it is stopped (TERM) or either exits.
#
# Usage: PITH=path/to/pith RUN=DIR scripts/perf-icap.sh WHAT SQUID_PORT ICAP_PORT
#   WHAT  pith-declutter  pith's [[icap]] service, profile declutter, cache off
#         pith-pass       the same with profile pass: every answer is 204
#         cicap-echo      c-icap's echo service (Debian c-icap), which returns what it is sent
# Files go to RUN/icap-WHAT/. Everything listens on 127.0.0.1; waiting for the ICAP port is
# bounded (10 s).
set -euo pipefail
what=$1 squid_port=$2 icap_port=$3
dir=$RUN/icap-$what
mkdir -p "$dir"
chmod 777 "$dir"
pids=()
trap 'kill -TERM "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT TERM INT

case "$what" in
    pith-declutter | pith-pass)
        profile=${what#pith-}
        cat > "$dir/pith.toml" <<CONF
[log]
level = "warn"

# pith's own HTTP listener, unused here.
[[listener]]
address = "127.0.0.1:0"
profile = "pass"

[[icap]]
address = "127.0.0.1:$icap_port"
profile = "$profile"

[cache]
enabled = false
CONF
        "$PITH" serve --config "$dir/pith.toml" > "$dir/icap.log" 2>&1 &
        pids+=($!)
        service=respmod
        ;;
    cicap-echo)
        modules=$(dirname "$(find /usr/lib -name srv_echo.so -path '*c_icap*' | head -n 1)")
        [ -n "$modules" ] || { echo "perf-icap.sh: c-icap's srv_echo.so not found (apt-get install c-icap)" >&2; exit 1; }
        cat > "$dir/c-icap.conf" <<CONF
PidFile $dir/c-icap.pid
CommandsSocket $dir/c-icap.ctl
Timeout 300
MaxKeepAliveRequests 0
KeepAliveTimeout 600
StartServers 2
MaxServers 4
MinSpareThreads 10
MaxSpareThreads 20
ThreadsPerChild 32
Port 127.0.0.1:$icap_port
TmpDir $dir
MaxMemObject 1048576
DebugLevel 0
ModulesDir $modules
ServicesDir $modules
ServerLog $dir/server.log
AccessLog $dir/access.log
Service echo srv_echo.so
CONF
        [ "$(id -u)" -ne 0 ] || printf 'User proxy\nGroup proxy\n' >> "$dir/c-icap.conf"
        c-icap -N -f "$dir/c-icap.conf" > "$dir/icap.log" 2>&1 &
        pids+=($!)
        service=echo
        ;;
    *) echo "perf-icap.sh: WHAT is pith-declutter, pith-pass or cicap-echo, not $what" >&2; exit 2;;
esac

for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$icap_port") 2>/dev/null && break
    sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$icap_port") 2>/dev/null || { echo "perf-icap.sh: $what did not open $icap_port" >&2; cat "$dir/icap.log" >&2; exit 1; }

# As the harness's `squid` peer (no cache, Via off), plus the ICAP service. bypass=off: a
# failing service fails requests instead of quietly measuring Squid alone.
cat > "$dir/squid.conf" <<CONF
http_port 127.0.0.1:$squid_port
pid_filename $dir/squid.pid
cache_log $dir/cache.log
access_log none
cache_store_log none
coredump_dir $dir
shutdown_lifetime 1 seconds
max_filedescriptors 8192
acl lo src 127.0.0.1/32
http_access allow lo
http_access deny all
via off
forwarded_for transparent
dns_v4_first on
pinger_enable off
cache deny all
cache_mem 0 MB
icap_enable on
icap_preview_enable on
icap_persistent_connections on
icap_service svc respmod_precache bypass=off icap://127.0.0.1:$icap_port/$service
adaptation_access svc allow all
CONF
squid -N -f "$dir/squid.conf" > "$dir/squid.log" 2>&1 &
pids+=($!)
wait -n "${pids[@]}"
