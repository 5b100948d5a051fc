package harness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// RequireServicesEnv is the variable that turns a missing service or
// binary into a test failure instead of a skip.
const RequireServicesEnv = "FLOE_REQUIRE_SERVICES"

// Env is what the tests run against: the services e2e/services/up started
// and the binaries make build wrote.
type Env struct {
	// KafkaBootstrap is the PLAINTEXT bootstrap list (FLOE_KAFKA_BOOTSTRAP).
	KafkaBootstrap string
	// KafkaBrokers is the number of brokers (FLOE_KAFKA_BROKERS, default 1).
	KafkaBrokers int
	// SASLBootstrap, SASLUser, SASLPassword and SASLMechanisms describe the
	// SASL_PLAINTEXT listeners (FLOE_KAFKA_SASL_*), set when the services
	// were started with --sasl.
	SASLBootstrap, SASLUser, SASLPassword, SASLMechanisms string
	// SchemaRegistryURL is the Confluent-compatible registry API
	// (FLOE_SCHEMA_REGISTRY_URL).
	SchemaRegistryURL string
	// PostgresURL is a postgres:// URL of a database the tests may use as
	// an Iceberg SQL catalog (FLOE_POSTGRES_URL).
	PostgresURL string
	// Python is the readers venv's interpreter (FLOE_PYTHON) and ReadTable
	// the path of e2e/readers/read_table.py (FLOE_READ_TABLE).
	Python, ReadTable string
	// Lake is the object store and the REST catalog on it (FLOE_S3_*,
	// FLOE_REST_CATALOG_*), set unless the services were started with
	// --no-lake.
	Lake Lake
	// BinDir holds floe and plugins/floe-plugin-* (FLOE_BIN_DIR, default
	// <repo>/bin).
	BinDir string
	// RepoDir is the floe repository's root ("" when not found).
	RepoDir string
	// KafkaLibs is the libs folder of the Kafka distribution the services
	// run (FLOE_KAFKA_LIBS): Connect's runtime jars and their Jackson.
	KafkaLibs string
	// RequireServices is FLOE_REQUIRE_SERVICES=1: missing needs fail.
	RequireServices bool
}

// LoadEnv reads the environment. It does not check anything; [Require]
// does.
func LoadEnv() Env {
	e := Env{
		KafkaBootstrap:    os.Getenv("FLOE_KAFKA_BOOTSTRAP"),
		KafkaBrokers:      1,
		SASLBootstrap:     os.Getenv("FLOE_KAFKA_SASL_BOOTSTRAP"),
		SASLUser:          os.Getenv("FLOE_KAFKA_SASL_USER"),
		SASLPassword:      os.Getenv("FLOE_KAFKA_SASL_PASSWORD"),
		SASLMechanisms:    os.Getenv("FLOE_KAFKA_SASL_MECHANISMS"),
		SchemaRegistryURL: os.Getenv("FLOE_SCHEMA_REGISTRY_URL"),
		PostgresURL:       os.Getenv("FLOE_POSTGRES_URL"),
		Python:            os.Getenv("FLOE_PYTHON"),
		ReadTable:         os.Getenv("FLOE_READ_TABLE"),
		BinDir:            os.Getenv("FLOE_BIN_DIR"),
		KafkaLibs:         os.Getenv("FLOE_KAFKA_LIBS"),
		RepoDir:           repoDir(),
		RequireServices:   os.Getenv(RequireServicesEnv) == "1",
		Lake: Lake{
			S3Endpoint:     os.Getenv("FLOE_S3_ENDPOINT"),
			S3Region:       os.Getenv("FLOE_S3_REGION"),
			S3AccessKey:    os.Getenv("FLOE_S3_ACCESS_KEY"),
			S3SecretKey:    os.Getenv("FLOE_S3_SECRET_KEY"),
			S3Bucket:       os.Getenv("FLOE_S3_BUCKET"),
			S3Root:         os.Getenv("FLOE_S3_ROOT"),
			S3Log:          os.Getenv("FLOE_S3_LOG"),
			RESTURI:        os.Getenv("FLOE_REST_CATALOG_URI"),
			RESTCredential: os.Getenv("FLOE_REST_CATALOG_CREDENTIAL"),
			RESTToken:      os.Getenv("FLOE_REST_CATALOG_TOKEN"),
			RESTWarehouse:  os.Getenv("FLOE_REST_CATALOG_WAREHOUSE"),
			RESTLog:        os.Getenv("FLOE_REST_CATALOG_LOG"),
		},
	}
	if n, err := strconv.Atoi(os.Getenv("FLOE_KAFKA_BROKERS")); err == nil && n > 0 {
		e.KafkaBrokers = n
	}
	if e.BinDir == "" && e.RepoDir != "" {
		e.BinDir = filepath.Join(e.RepoDir, "bin")
	}
	if e.BinDir != "" {
		if abs, err := filepath.Abs(e.BinDir); err == nil {
			e.BinDir = abs
		}
	}
	return e
}

// FloeBin is the path of the floe binary.
func (e Env) FloeBin() string { return filepath.Join(e.BinDir, "floe") }

// PluginDir is the folder of the plugin binaries (plugin.path).
func (e Env) PluginDir() string { return filepath.Join(e.BinDir, "plugins") }

// PluginBin is the path of plugin binary floe-plugin-<name>.
func (e Env) PluginBin(name string) string {
	return filepath.Join(e.PluginDir(), "floe-plugin-"+name)
}

// Need is something a test needs: a service, the readers, a binary.
type Need string

// Needs.
const (
	// Kafka is a PLAINTEXT Kafka broker.
	Kafka Need = "kafka"
	// SchemaRegistry is the Confluent-compatible Schema Registry.
	SchemaRegistry Need = "schema-registry"
	// Postgres is a PostgreSQL database for an Iceberg SQL catalog.
	Postgres Need = "postgres"
	// Readers is the PyIceberg/DuckDB reader (FLOE_PYTHON, FLOE_READ_TABLE).
	Readers Need = "readers"
	// SASL is Kafka's SASL_PLAINTEXT listener (e2e/services/up --sasl).
	SASL Need = "kafka-sasl"
	// FloeBinary is bin/floe.
	FloeBinary Need = "floe"
	// LakeServices is the S3 object store and the Iceberg REST catalog on
	// it (e2e/services/up without --no-lake).
	LakeServices Need = "lake"
	// ConnectClasses is Kafka Connect's runtime jars (FLOE_KAFKA_LIBS)
	// and a java that runs a source file (11 or later): tests decode
	// floe's answers with Connect's own entity classes.
	ConnectClasses Need = "connect-classes"
	// ConnectPy is kafka-connect-py, a Kafka Connect client from PyPI, in
	// the readers venv (e2e/readers/requirements.txt pins it).
	ConnectPy Need = "connect-py"
)

// Plugin is the need for plugin binary floe-plugin-<binary> in
// FLOE_BIN_DIR/plugins ("datagen", "iceberg", "partitioners", "kafka",
// "iceberg-maintenance").
func Plugin(binary string) Need { return Need("plugin:" + binary) }

// Require returns the environment when every need is met. Otherwise it
// skips t, naming what is missing and how to get it, or fails t when
// FLOE_REQUIRE_SERVICES=1.
func Require(t testing.TB, needs ...Need) Env {
	t.Helper()
	e := LoadEnv()
	var missing []string
	for _, n := range needs {
		if msg := e.check(n); msg != "" {
			missing = append(missing, msg)
		}
	}
	if len(missing) == 0 {
		return e
	}
	msg := "this test needs:\n  - " + strings.Join(missing, "\n  - ")
	if e.RequireServices {
		t.Fatalf("%s=1 but %s", RequireServicesEnv, msg)
	}
	t.Skipf("skipped: %s\n(set %s=1 to fail instead of skipping)", msg, RequireServicesEnv)
	return e
}

const startServices = "run e2e/services/up, then . /tmp/floe-services/env"

// check returns "" when n is met, else what is missing and the next step.
func (e Env) check(n Need) string {
	switch n {
	case Kafka:
		if e.KafkaBootstrap == "" {
			return "Kafka: FLOE_KAFKA_BOOTSTRAP is not set (" + startServices + ")"
		}
	case SchemaRegistry:
		if e.SchemaRegistryURL == "" {
			return "a Schema Registry: FLOE_SCHEMA_REGISTRY_URL is not set (" + startServices + ")"
		}
	case Postgres:
		if e.PostgresURL == "" {
			return "PostgreSQL: FLOE_POSTGRES_URL is not set (" + startServices + ")"
		}
	case Readers:
		if e.Python == "" || e.ReadTable == "" {
			return "the PyIceberg/DuckDB readers: FLOE_PYTHON or FLOE_READ_TABLE is not set (" + startServices + ")"
		}
		if !executable(e.Python) {
			return fmt.Sprintf("the readers' python: FLOE_PYTHON=%s is not an executable file (run e2e/readers/setup)", e.Python)
		}
		if _, err := os.Stat(e.ReadTable); err != nil {
			return fmt.Sprintf("the table reader: FLOE_READ_TABLE=%s: %v", e.ReadTable, err)
		}
	case SASL:
		if e.SASLBootstrap == "" || e.SASLUser == "" {
			return "Kafka's SASL listener: FLOE_KAFKA_SASL_BOOTSTRAP is not set (start the services with e2e/services/up --sasl)"
		}
	case LakeServices:
		if e.Lake.S3Endpoint == "" || e.Lake.RESTURI == "" || e.Lake.S3Root == "" {
			return "the lake (S3 object store and REST catalog): FLOE_S3_ENDPOINT or FLOE_REST_CATALOG_URI is not set (" + startServices + "; do not pass --no-lake)"
		}
	case ConnectClasses:
		if e.KafkaLibs == "" {
			return "Kafka Connect's jars: FLOE_KAFKA_LIBS is not set (" + startServices + ")"
		}
		if m, _ := filepath.Glob(filepath.Join(e.KafkaLibs, "connect-runtime-*.jar")); len(m) == 0 {
			return fmt.Sprintf("Kafka Connect's runtime jar: no connect-runtime-*.jar in FLOE_KAFKA_LIBS=%s", e.KafkaLibs)
		}
		if _, err := exec.LookPath("java"); err != nil {
			return "java (11 or later) on PATH, to run Connect's classes: install a JDK (apt-get install default-jdk-headless)"
		}
	case ConnectPy:
		if !executable(e.Python) {
			return "the readers' python with kafka-connect-py: FLOE_PYTHON is not set or not executable (" + startServices + ")"
		}
		if out, err := exec.Command(e.Python, "-c", "import kafka_connect").CombinedOutput(); err != nil {
			return fmt.Sprintf("kafka-connect-py in the readers venv (%s: %v: %s): the venv predates e2e/readers/requirements.txt's pin; run e2e/readers/setup", e.Python, err, bytes.TrimSpace(out))
		}
	case FloeBinary:
		if !executable(e.FloeBin()) {
			return fmt.Sprintf("the floe binary: %s is missing or not executable (run make build, or set FLOE_BIN_DIR)", e.FloeBin())
		}
	default:
		if bin, ok := strings.CutPrefix(string(n), "plugin:"); ok {
			if !executable(e.PluginBin(bin)) {
				return fmt.Sprintf("plugin floe-plugin-%s: %s is missing or not executable (run make build; the plugin may not have landed yet)", bin, e.PluginBin(bin))
			}
			return ""
		}
		return fmt.Sprintf("unknown need %q (a harness bug)", string(n))
	}
	return ""
}

func executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// repoDir finds the floe repository's root from the working directory
// up: the folder whose go.mod declares module github.com/floehq/floe.
func repoDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.Contains(b, []byte("module github.com/floehq/floe\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
