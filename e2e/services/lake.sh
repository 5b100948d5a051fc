# shellcheck shell=bash disable=SC2034
# The lake services of e2e/services/up: an S3-compatible object store
# (versitygw over a local folder) and an Iceberg REST catalog (the Apache
# Iceberg reference server behind restcatalog/FloeRestCatalog.java) whose
# tables live in that store. Sourced by up after lib.sh; uses up's spawn,
# free_ports, wait_ready, fail_service and maven. README.md beside this
# file says why these two and what they were measured to do.

# s3_request sends one signed S3 request with curl (SigV4 on the
# UNSIGNED-PAYLOAD form) and prints the HTTP status. Only for requests
# without a query string: curl's SigV4 does not canonicalise queries the
# way S3 does.
s3_request() {
	local method="$1" path="$2"
	shift 2
	curl -sS -o /dev/null -w '%{http_code}' -X "$method" \
		--aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@" "$S3_ENDPOINT$path"
}

# fetch_versitygw builds the pinned versitygw release from the Go module
# proxy into the cache (go install module@version: the module's own
# go.sum, nothing of ours). First run only; about 3.5 minutes on 2 cores.
fetch_versitygw() {
	local dir="$FLOE_CACHE_DIR/versitygw-$VERSITYGW_VERSION"
	[[ -x "$dir/versitygw" && -f "$dir/.complete" ]] && return 0
	command -v go >/dev/null || die "go not found; it builds versitygw (the S3 store) from the Go module proxy, or pass --no-lake"
	say "building versitygw $VERSITYGW_VERSION from the Go module proxy (first run only, ~3 min)…"
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$dir" && GOBIN="$dir" GOWORK=off GOFLAGS=-mod=mod \
		go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION") >"$dir/build.log" 2>&1 || {
		tail -n 40 "$dir/build.log" >&2
		die "go install versitygw@$VERSITYGW_VERSION failed (log: $dir/build.log)"
	}
	touch "$dir/.complete"
}

# rest_catalog_dir is the cache folder of the REST catalog's jars.
rest_catalog_dir() { echo "$FLOE_CACHE_DIR/iceberg-rest-$ICEBERG_REST_VERSION"; }

# fetch_rest_catalog puts the Iceberg REST server's jars into the cache
# with a throwaway pom (as fetch_kafka does): iceberg-core and its test jar
# (RESTCatalogAdapter, RESTCatalogServlet), iceberg-aws with the AWS SDK
# modules S3FileIO loads, Jetty 11, sqlite-jdbc. Then it compiles
# FloeRestCatalog.java against them, into a folder named by the source's
# hash so an edit recompiles.
fetch_rest_catalog() {
	local dir src sum
	dir="$(rest_catalog_dir)"
	src="$HERE/restcatalog/FloeRestCatalog.java"
	if [[ ! -f "$dir/.complete" ]]; then
		say "downloading the Iceberg REST catalog $ICEBERG_REST_VERSION jars (first run only)…"
		rm -rf "$dir"
		mkdir -p "$dir"
		local dep deps=""
		for dep in \
			"org.apache.iceberg:iceberg-core:$ICEBERG_REST_VERSION" \
			"org.apache.iceberg:iceberg-core:$ICEBERG_REST_VERSION:tests" \
			"org.apache.iceberg:iceberg-aws:$ICEBERG_REST_VERSION" \
			"software.amazon.awssdk:s3:$AWS_SDK_JAVA_VERSION" \
			"software.amazon.awssdk:sts:$AWS_SDK_JAVA_VERSION" \
			"software.amazon.awssdk:kms:$AWS_SDK_JAVA_VERSION" \
			"software.amazon.awssdk:url-connection-client:$AWS_SDK_JAVA_VERSION" \
			"software.amazon.awssdk:apache-client:$AWS_SDK_JAVA_VERSION" \
			"org.xerial:sqlite-jdbc:$SQLITE_JDBC_VERSION" \
			"org.eclipse.jetty:jetty-servlet:$JETTY_VERSION" \
			"org.slf4j:slf4j-simple:$SLF4J_VERSION"; do
			IFS=: read -r g a v c <<<"$dep"
			deps+="<dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version>${c:+<classifier>$c</classifier>}</dependency>"
		done
		cat >"$dir/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.floe.e2e</groupId>
  <artifactId>rest-catalog-libs</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>$deps</dependencies>
</project>
EOF
		(cd "$dir" && maven "$DEPENDENCY_PLUGIN:copy-dependencies" -DoutputDirectory=libs) >"$dir/mvn.log" 2>&1 || {
			tail -n 40 "$dir/mvn.log" >&2
			die "could not download the REST catalog's jars from Maven Central (log: $dir/mvn.log)"
		}
		touch "$dir/.complete"
	fi
	sum="$(sha256sum <"$src" | cut -c1-16)"
	REST_CATALOG_CLASSES="$dir/classes-$sum"
	if [[ ! -f "$REST_CATALOG_CLASSES/FloeRestCatalog.class" ]]; then
		rm -rf "$REST_CATALOG_CLASSES.tmp"
		mkdir -p "$REST_CATALOG_CLASSES.tmp"
		javac -nowarn -d "$REST_CATALOG_CLASSES.tmp" -cp "$dir/libs/*" "$src" >"$dir/javac.log" 2>&1 || {
			cat "$dir/javac.log" >&2
			die "javac $src failed"
		}
		rm -rf "$REST_CATALOG_CLASSES"
		mv "$REST_CATALOG_CLASSES.tmp" "$REST_CATALOG_CLASSES"
	fi
}

# start_s3 starts versitygw's posix backend on a fresh folder: every
# subfolder of the root is a bucket, every file an object. Its stdout is
# its request log (one line per request: time, status, duration, method,
# path, query), which tests read to count what a task asked the store.
start_s3() {
	local root="$FLOE_SERVICES_DIR/s3/root"
	mkdir -p "$root"
	S3_PORT="$(free_ports 1)"
	S3_ENDPOINT="http://127.0.0.1:$S3_PORT"
	say "starting versitygw $VERSITYGW_VERSION (S3 over $root)…"
	S3_PID="$(spawn "$LOGS/s3.log" "$FLOE_SERVICES_DIR/s3" \
		"$FLOE_CACHE_DIR/versitygw-$VERSITYGW_VERSION/versitygw" \
		--access "$S3_ACCESS_KEY" --secret "$S3_SECRET_KEY" --region "$S3_REGION" \
		--port "127.0.0.1:$S3_PORT" posix "$root")"
	STARTED+=("$S3_PID")
	# Any HTTP answer (403 to an unsigned request) means it is serving.
	wait_ready "object store" "$LOGS/s3.log" "$S3_PID" 60 \
		"[[ \$(curl -s -o /dev/null -w '%{http_code}' '$S3_ENDPOINT/') != 000 ]]"
	local code
	code="$(s3_request PUT "/$S3_BUCKET")"
	[[ "$code" == 200 ]] || fail_service "object store" "$LOGS/s3.log" "refused to create bucket $S3_BUCKET (HTTP $code)"
	say "object store ready at $S3_ENDPOINT (bucket $S3_BUCKET)"
}

# start_rest_catalog writes the catalog's properties (secrets included, in
# the state folder only) and starts it on the default Java.
start_rest_catalog() {
	local dir="$FLOE_SERVICES_DIR/rest-catalog"
	mkdir -p "$dir"
	REST_PORT="$(free_ports 1)"
	REST_URI="http://127.0.0.1:$REST_PORT"
	REST_WAREHOUSE="s3://$S3_BUCKET/rest"
	cat >"$dir/catalog.properties" <<EOF
floe.host=127.0.0.1
floe.port=$REST_PORT
floe.credential=$REST_CREDENTIAL
floe.token=$REST_TOKEN
floe.token-key=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
floe.warehouses=$REST_WAREHOUSE
catalog.catalog-impl=org.apache.iceberg.jdbc.JdbcCatalog
catalog.uri=jdbc:sqlite:$dir/catalog.db?journal_mode=WAL&busy_timeout=10000
catalog.jdbc.schema-version=V1
catalog.warehouse=$REST_WAREHOUSE
catalog.io-impl=org.apache.iceberg.aws.s3.S3FileIO
catalog.s3.endpoint=$S3_ENDPOINT
catalog.s3.path-style-access=true
catalog.s3.access-key-id=$S3_ACCESS_KEY
catalog.s3.secret-access-key=$S3_SECRET_KEY
catalog.client.region=$S3_REGION
EOF
	chmod 600 "$dir/catalog.properties"
	say "starting the Iceberg REST catalog $ICEBERG_REST_VERSION…"
	local opts
	read -r -a opts <<<"$REST_CATALOG_JAVA_OPTS"
	REST_PID="$(spawn "$LOGS/rest-catalog.log" "$dir" \
		"$REST_CATALOG_JAVA" "${opts[@]}" -XX:+ExitOnOutOfMemoryError \
		-Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
		-Dorg.slf4j.simpleLogger.log.org.apache.iceberg.rest.RESTCatalogServlet=off \
		-cp "$(rest_catalog_dir)/libs/*:$REST_CATALOG_CLASSES" FloeRestCatalog "$dir/catalog.properties")"
	STARTED+=("$REST_PID")
}

wait_rest_catalog() {
	wait_ready "REST catalog" "$LOGS/rest-catalog.log" "$REST_PID" 120 \
		"grep -q 'floe-rest-catalog ready on' '$LOGS/rest-catalog.log'"
	local code
	code="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $REST_TOKEN" "$REST_URI/v1/config")"
	[[ "$code" == 200 ]] || fail_service "REST catalog" "$LOGS/rest-catalog.log" "answered GET /v1/config with HTTP $code"
	say "REST catalog ready at $REST_URI (warehouse $REST_WAREHOUSE)"
}

# write_lake_env prints the lake's export lines for the env file.
write_lake_env() {
	echo "export FLOE_S3_ENDPOINT=\"$S3_ENDPOINT\""
	echo "export FLOE_S3_REGION=\"$S3_REGION\""
	echo "export FLOE_S3_ACCESS_KEY=\"$S3_ACCESS_KEY\""
	echo "export FLOE_S3_SECRET_KEY=\"$S3_SECRET_KEY\""
	echo "export FLOE_S3_BUCKET=\"$S3_BUCKET\""
	echo "export FLOE_S3_ROOT=\"$FLOE_SERVICES_DIR/s3/root\""
	echo "export FLOE_S3_LOG=\"$LOGS/s3.log\""
	echo "export FLOE_S3_PID=\"$S3_PID\""
	echo "export FLOE_REST_CATALOG_URI=\"$REST_URI\""
	echo "export FLOE_REST_CATALOG_CREDENTIAL=\"$REST_CREDENTIAL\""
	echo "export FLOE_REST_CATALOG_TOKEN=\"$REST_TOKEN\""
	echo "export FLOE_REST_CATALOG_WAREHOUSE=\"$REST_WAREHOUSE\""
	echo "export FLOE_REST_CATALOG_LOG=\"$LOGS/rest-catalog.log\""
	echo "export FLOE_REST_CATALOG_PID=\"$REST_PID\""
}
