// ConnectEntities decodes REST answers with Kafka Connect's own entity
// classes (org.apache.kafka:connect-runtime) and a plain Jackson
// ObjectMapper, exactly as Connect's RestClient and Java tools built on
// those classes read a worker's answers: an unknown field or a value the
// classes do not accept fails.
//
// Run with Connect's jars on the class path (Java 11+ runs a source file):
//
//	java -cp "$KAFKA/libs/*" ConnectEntities.java MANIFEST
//
// MANIFEST has one line per answer, "<entity> <file>", where entity is one
// of the names in the switch below and file holds the answer's body. Each
// line prints "ok <entity> <file>" or "FAIL <entity> <file>: <why>"; the
// exit status is the number of failures (at most 100).
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.connect.runtime.isolation.PluginType;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfos;
import org.apache.kafka.connect.runtime.rest.entities.ConfigKeyInfo;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorInfo;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorOffsets;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorStateInfo;
import org.apache.kafka.connect.runtime.rest.entities.ErrorMessage;
import org.apache.kafka.connect.runtime.rest.entities.LoggerLevel;
import org.apache.kafka.connect.runtime.rest.entities.PluginInfo;
import org.apache.kafka.connect.runtime.rest.entities.ServerInfo;
import org.apache.kafka.connect.runtime.rest.entities.TaskInfo;
import org.apache.kafka.connect.runtime.rest.entities.WorkerStatus;

public class ConnectEntities {
    static final ObjectMapper MAPPER = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        int failures = 0;
        for (String line : Files.readAllLines(Path.of(args[0]))) {
            line = line.strip();
            if (line.isEmpty()) continue;
            String[] parts = line.split(" ", 2);
            String entity = parts[0], file = parts[1];
            try {
                String body = Files.readString(Path.of(file));
                decode(entity, body);
                System.out.println("ok " + entity + " " + file);
            } catch (Exception e) {
                failures++;
                System.out.println("FAIL " + entity + " " + file + ": " + e.toString().replace('\n', ' '));
            }
        }
        System.exit(Math.min(failures, 100));
    }

    static void decode(String entity, String body) throws Exception {
        switch (entity) {
            case "ServerInfo" -> MAPPER.readValue(body, ServerInfo.class);
            case "WorkerStatus" -> MAPPER.readValue(body, WorkerStatus.class);
            case "ConnectorNames" -> MAPPER.readValue(body, new TypeReference<List<String>>() {});
            case "ConnectorInfo" -> MAPPER.readValue(body, ConnectorInfo.class);
            case "ConnectorConfig" -> MAPPER.readValue(body, new TypeReference<Map<String, String>>() {});
            case "ConnectorStateInfo" -> MAPPER.readValue(body, ConnectorStateInfo.class);
            case "TaskState" -> MAPPER.readValue(body, ConnectorStateInfo.TaskState.class);
            case "TaskInfos" -> MAPPER.readValue(body, new TypeReference<List<TaskInfo>>() {});
            case "ActiveTopics" -> {
                // ActiveTopicsInfo's creator has no @JsonProperty names, so
                // no mapper can build it (Connect only writes it): check
                // the shape it writes, {"<connector>": {"topics": [...]}}.
                Map<String, Map<String, List<String>>> m = MAPPER.readValue(body, new TypeReference<>() {});
                for (var e : m.entrySet()) {
                    if (!e.getValue().keySet().equals(Set.of("topics"))) {
                        throw new IllegalArgumentException("connector " + e.getKey() + ": fields " + e.getValue().keySet() + ", ActiveTopicsInfo has only topics");
                    }
                }
            }
            case "ConnectorOffsets" -> MAPPER.readValue(body, ConnectorOffsets.class);
            case "PluginInfos" -> {
                // Connect writes PluginType.toString() ("source"), which
                // its own PluginInfo creator cannot read back (it expects
                // the enum's name). Accept what Connect writes: every field
                // as PluginInfo has it, the type one of PluginType's.
                Set<String> types = new HashSet<>();
                for (PluginType t : PluginType.values()) types.add(t.toString());
                for (JsonNode p : MAPPER.readTree(body)) {
                    ObjectNode o = ((ObjectNode) p).deepCopy();
                    String type = o.path("type").asText();
                    if (!types.contains(type)) {
                        throw new IllegalArgumentException("plugin " + o.path("class") + ": type \"" + type + "\" is none of Connect's plugin types " + types);
                    }
                    o.put("type", PluginType.valueOf(type.toUpperCase(Locale.ROOT)).name());
                    MAPPER.treeToValue(o, PluginInfo.class);
                }
            }
            case "ConfigKeyInfos" -> MAPPER.readValue(body, new TypeReference<List<ConfigKeyInfo>>() {});
            case "ConfigInfos" -> MAPPER.readValue(body, ConfigInfos.class);
            case "ErrorMessage" -> MAPPER.readValue(body, ErrorMessage.class);
            case "LoggerLevels" -> MAPPER.readValue(body, new TypeReference<Map<String, LoggerLevel>>() {});
            case "LoggerLevel" -> MAPPER.readValue(body, LoggerLevel.class);
            case "LoggerNames" -> MAPPER.readValue(body, new TypeReference<List<String>>() {});
            case "Expanded" -> {
                // GET /connectors?expand=status&expand=info: Connect builds
                // it from a map of name to {"status": ConnectorStateInfo,
                // "info": ConnectorInfo}; decode each part with its class.
                JsonNode root = MAPPER.readTree(body);
                for (var it = root.fields(); it.hasNext(); ) {
                    var e = it.next();
                    for (var p = e.getValue().fields(); p.hasNext(); ) {
                        var part = p.next();
                        switch (part.getKey()) {
                            case "status" -> MAPPER.treeToValue(part.getValue(), ConnectorStateInfo.class);
                            case "info" -> MAPPER.treeToValue(part.getValue(), ConnectorInfo.class);
                            default -> throw new IllegalArgumentException("connector " + e.getKey() + ": unknown expansion " + part.getKey());
                        }
                    }
                }
            }
            default -> throw new IllegalArgumentException("unknown entity " + entity);
        }
    }
}
