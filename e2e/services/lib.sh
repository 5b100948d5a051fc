# shellcheck shell=bash disable=SC2034
# Helpers shared by up, down, smoke and kafka-tool. Sourced, never run
# (hence SC2034: the constants are used by the scripts that source this).

FLOE_SERVICES_DIR="${FLOE_SERVICES_DIR:-/tmp/floe-services}"
FLOE_CACHE_DIR="${FLOE_CACHE_DIR:-$HOME/.cache/floe}"
# Absolute, because these paths end up in server configs and in the env
# file that tests read from other working directories.
[[ "$FLOE_SERVICES_DIR" == /* ]] || FLOE_SERVICES_DIR="$PWD/$FLOE_SERVICES_DIR"
[[ "$FLOE_CACHE_DIR" == /* ]] || FLOE_CACHE_DIR="$PWD/$FLOE_CACHE_DIR"
ENV_FILE="$FLOE_SERVICES_DIR/env"

# Pinned versions. Overridable so a test run can try a newer one without an
# edit, but the defaults are what CI and the README vouch for.
KAFKA_VERSION="${FLOE_KAFKA_VERSION:-4.1.1}"
LOG4J_VERSION="${FLOE_LOG4J_VERSION:-2.25.3}"
# Kafka still depends on slf4j-api 1.7; log4j-slf4j2-impl needs the 2.x API
# (which 1.7 callers link against unchanged), so we pin it explicitly.
SLF4J_VERSION="${FLOE_SLF4J_VERSION:-2.0.17}"
APICURIO_VERSION="${FLOE_APICURIO_VERSION:-3.3.3}"
DEPENDENCY_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
# The lake (--no-lake skips it): versitygw from the Go module proxy, the
# Iceberg REST catalog's jars from Maven Central.
VERSITYGW_VERSION="${FLOE_VERSITYGW_VERSION:-v1.8.0}"
ICEBERG_REST_VERSION="${FLOE_ICEBERG_REST_VERSION:-1.10.1}"
AWS_SDK_JAVA_VERSION="${FLOE_AWS_SDK_JAVA_VERSION:-2.31.78}"
JETTY_VERSION="${FLOE_JETTY_VERSION:-11.0.25}"
SQLITE_JDBC_VERSION="${FLOE_SQLITE_JDBC_VERSION:-3.50.3.0}"

# Kafka 4 needs Java 17+, which is the machine default. Apicurio runs on the
# newest JDK we have because its Quarkus build is tested there.
KAFKA_JAVA="${FLOE_KAFKA_JAVA:-java}"
APICURIO_JAVA="${FLOE_APICURIO_JAVA:-/usr/lib/jvm/temurin-25-jdk-amd64/bin/java}"

REST_CATALOG_JAVA="${FLOE_REST_CATALOG_JAVA:-java}"
# The REST catalog's JVM: the client compiler only and the serial
# collector, so on 2 shared cores no C2 compiler or G1 thread competes
# with floe, Kafka and the readers (services/README.md has the figures).
REST_CATALOG_JAVA_OPTS="${FLOE_REST_CATALOG_JAVA_OPTS:--Xms128m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1}"

SASL_USER=floe
SASL_PASSWORD=floe-secret
# Test credentials of the lake services: the object store's root user, the
# REST catalog's OAuth2 client (client_id:client_secret) and bearer token.
S3_ACCESS_KEY=floe
S3_SECRET_KEY=floe-s3-secret
S3_REGION=us-east-1
S3_BUCKET=floe-lake
REST_CREDENTIAL=floe:floe-catalog-secret
REST_TOKEN=floe-catalog-token

say() { printf '%s\n' "floe-services: $*" >&2; }

die() {
	say "error: $*"
	exit 1
}

# pid_alive succeeds if pid is a live process (not a zombie). kill -0 alone
# is fooled by zombies of children we started in this very shell.
pid_alive() {
	local pid="$1" state
	[[ -n "$pid" ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	state="$(ps -o stat= -p "$pid" 2>/dev/null || true)"
	[[ -n "$state" && "$state" != Z* ]]
}

# env_pids lists every pid recorded in the env file, one per line, so down
# and the already-running check agree on what "our services" means.
env_pids() {
	[[ -f "$ENV_FILE" ]] || return 0
	# shellcheck disable=SC1090
	(
		source "$ENV_FILE"
		# Unquoted on purpose: FLOE_KAFKA_PIDS holds one pid per broker.
		# shellcheck disable=SC2086
		printf '%s\n' ${FLOE_KAFKA_PIDS:-} ${FLOE_SCHEMA_REGISTRY_PID:-} ${FLOE_POSTGRES_PID:-} \
			${FLOE_REST_CATALOG_PID:-} ${FLOE_S3_PID:-}
	) | grep -E '^[0-9]+$' || true
}

# stop_pids sends TERM (INT for postgres: its "fast" shutdown) and waits up
# to a deadline, then KILLs what is left, so down never hangs on a broker
# stuck in controlled shutdown with no quorum left to talk to.
stop_pids() {
	local timeout="$1"
	shift
	local pid deadline
	for pid in "$@"; do
		pid_alive "$pid" || continue
		if [[ "$(ps -o comm= -p "$pid" 2>/dev/null)" == postgres ]]; then
			kill -INT "$pid" 2>/dev/null || true
		else
			kill -TERM "$pid" 2>/dev/null || true
		fi
	done
	deadline=$((SECONDS + timeout))
	for pid in "$@"; do
		while pid_alive "$pid" && ((SECONDS < deadline)); do
			sleep 0.2
		done
		if pid_alive "$pid"; then
			say "pid $pid did not stop in ${timeout}s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
}

# kafka_libs_dir is the jar folder of the pinned Kafka in the cache.
kafka_libs_dir() { echo "$FLOE_CACHE_DIR/kafka-$KAFKA_VERSION/libs"; }
