// Package providers resolves Kafka Connect's config provider references
// in connector configs: ${file:/etc/floe/secrets.properties:password},
// ${env:CATALOG_TOKEN}, ${directory:/run/secrets:catalog-token}. A
// connector's config is stored and answered with its references; only the
// configs floe hands to validation and to plugins hold the values, so a
// secret kept in a file or the environment never reaches the REST API or
// the data dir.
//
// # Declaring providers
//
// As in Connect, the worker config lists the providers a connector may
// use, and names each one's class:
//
//	"config.providers": "file,env,directory",
//	"config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
//
// The classes floe implements are Connect's FileConfigProvider,
// EnvVarConfigProvider and DirectoryConfigProvider; a provider named file,
// env or directory may leave its class out. A reference to a provider the
// worker does not list stays as it is, as in Connect.
package providers
