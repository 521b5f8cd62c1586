#!/usr/bin/env bash
# An S3 server on loopback for trying and benchmarking the S3 store outside the tests: the tests'
# own server (S3Server, run by S3Loopback: s3proxy, a Maven test dependency, never committed, over
# its file-system backend in DIR, with each PUT, copy and delete whole before a listing sees it, as
# on S3), bound to 127.0.0.1 only, with signed requests (aws-v2-or-v4). It runs in the foreground
# until it is stopped (SIGINT, SIGTERM) and stops the server when it exits, whatever the reason.
# The first run compiles the test classes (./mvnw test-compile).
#
# Usage: scripts/s3-loopback.sh [--port N] [--ready-file FILE] [--bucket NAME]... DIR
#   DIR            where the buckets go (one directory per bucket, objects as files); made if missing
#   --port N       the port on 127.0.0.1 (default: a free one)
#   --ready-file   once s3proxy answers, write its endpoint (http://127.0.0.1:PORT) to FILE
#   --bucket NAME  make the bucket NAME (an empty DIR/NAME) before starting (repeatable)
# Credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY if set, else the tests' fixed ones
# (chibi-test / chibi-test-secret); give the client the same. Prints one line when it answers:
#   s3-loopback: http://127.0.0.1:PORT serving DIR (pid P)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
port=""
ready_file=""
buckets=()
base_dir=""
start_limit=60 # seconds for s3proxy to answer (a cold JVM on a busy machine)

usage() { sed -n '2,/^#   s3-loopback: /p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --port) port=${2:?--port needs a number}; shift ;;
        --ready-file) ready_file=${2:?--ready-file needs a file}; shift ;;
        --bucket) buckets+=("${2:?--bucket needs a name}"); shift ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "s3-loopback.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
        *) [ -z "$base_dir" ] || { echo "s3-loopback.sh: one DIR only" >&2; exit 2; }; base_dir=$1 ;;
    esac
    shift
done
[ -n "$base_dir" ] || { usage >&2; exit 2; }
mkdir -p "$base_dir"
base_dir=$(cd "$base_dir" && pwd)
for b in "${buckets[@]}"; do mkdir -p "$base_dir/$b"; done

free_port() { # a port nothing on 127.0.0.1 listens on (a connect refused)
    local p
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
    done
    echo "s3-loopback.sh: no free port found" >&2
    return 1
}
[ -n "$port" ] || port=$(free_port)
case "$port" in ''|*[!0-9]*) echo "s3-loopback.sh: --port '$port' is not a number" >&2; exit 2 ;; esac
endpoint="http://127.0.0.1:$port"

work=""
java_pid=""
build_pid=""
stop() {
    set +e
    for pid in "$build_pid" "$java_pid"; do
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null
        fi
    done
    [ -z "$work" ] || rm -rf "$work"
    [ -z "$ready_file" ] || rm -f "$ready_file"
}
trap stop EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# Maven in the background and waited for: bash runs a trap only once its foreground child has ended,
# so a first run's build stopped by Ctrl-C or SIGTERM went on writing target/ after the script had
# gone. exec: the pid is Maven's JVM itself, which stop() ends.
maven() {
    (cd "$here" && exec ./mvnw -q -B "$@") >&2 &
    build_pid=$!
    wait "$build_pid"
    build_pid=""
}

# the server's class path: the test classes, and Maven's test class path (cached in target/ until
# pom.xml changes)
cp_file="$here/target/s3proxy.classpath"
if [ ! -s "$cp_file" ] || [ "$here/pom.xml" -nt "$cp_file" ]; then
    mkdir -p "$here/target"
    maven dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile="$cp_file.tmp"
    mv "$cp_file.tmp" "$cp_file"
fi
if ! tr ':' '\n' < "$cp_file" | grep -q '/s3proxy-[^/]*\.jar$'; then
    echo "s3-loopback.sh: s3proxy is not on Maven's test class path ($cp_file)" >&2
    exit 1
fi
server_class="$here/target/test-classes/dev/chibifs/store/s3/S3Loopback.class"
server_src="$here/src/test/java/dev/chibifs/store/s3"
if [ ! -f "$server_class" ] || [ -n "$(find "$server_src" -newer "$server_class" -name '*.java' | head -1)" ]; then
    maven test-compile
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/s3-loopback.XXXXXX")

# the credentials reach it through the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), never a
# command line; without them, the tests' fixed ones
java -Xmx256m -Dorg.slf4j.simpleLogger.logFile="$work/s3proxy.log" \
    -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp "$here/target/test-classes:$here/target/classes:$(cat "$cp_file")" dev.chibifs.store.s3.S3Loopback \
    --dir "$base_dir" --port "$port" >> "$work/s3proxy.log" 2>&1 &
java_pid=$!

# answered: any HTTP status (an unsigned request gets 403) means Jetty is serving
deadline=$((SECONDS + start_limit))
until curl -s -o /dev/null --max-time 2 "$endpoint/"; do
    if ! kill -0 "$java_pid" 2>/dev/null; then
        echo "s3-loopback.sh: s3proxy exited before answering on $endpoint:" >&2
        tail -20 "$work/s3proxy.log" >&2
        exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "s3-loopback.sh: s3proxy did not answer on $endpoint within ${start_limit}s:" >&2
        tail -20 "$work/s3proxy.log" >&2
        exit 1
    fi
    sleep 0.1
done
if [ -n "$ready_file" ]; then
    printf '%s\n' "$endpoint" > "$ready_file.tmp" && mv "$ready_file.tmp" "$ready_file"
fi
echo "s3-loopback: $endpoint serving $base_dir (pid $java_pid)"
set +e
wait "$java_pid"
rc=$?
java_pid=""
echo "s3-loopback.sh: s3proxy exited ($rc); its log:" >&2
tail -20 "$work/s3proxy.log" >&2
exit "$rc"
