// FloeRestCatalog serves the Iceberg REST catalog API for floe's tests: the
// Apache Iceberg project's own reference server pieces (RESTCatalogAdapter
// and RESTCatalogServlet from the iceberg-core test jar, the same ones the
// iceberg-rest-fixture image runs) in front of a JdbcCatalog on a SQLite
// file, with table files in S3 through S3FileIO. What this file adds is
// what the fixture lacks and a production catalog has: it binds one
// address (127.0.0.1), it checks credentials (OAuth2 client credentials at
// /v1/oauth/tokens, or a static bearer token), it refuses warehouses it does
// not serve, and it logs one line per request.
//
// Usage: java -cp <libs>/*:<classes> FloeRestCatalog <config.properties>
//
// Keys of the properties file:
//   floe.host, floe.port        where to listen
//   floe.credential             client_id:client_secret accepted at /v1/oauth/tokens
//   floe.token                  a static bearer token also accepted
//   floe.token-key              the key tokens issued for a client are derived from,
//                               so they stay valid across restarts
//   floe.warehouses             comma-separated warehouse names or locations that
//                               GET /v1/config?warehouse= accepts (empty: any)
//   catalog.<key>               passed to the backing catalog without the prefix
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.FilterHolder;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public final class FloeRestCatalog {
  private FloeRestCatalog() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: FloeRestCatalog <config.properties>");
      System.exit(2);
    }
    Properties p = new Properties();
    try (InputStream in = new FileInputStream(args[0])) {
      p.load(in);
    }
    Map<String, String> catalogProps = new HashMap<>();
    for (String k : p.stringPropertyNames()) {
      if (k.startsWith("catalog.")) {
        catalogProps.put(k.substring("catalog.".length()), p.getProperty(k));
      }
    }
    Catalog catalog =
        CatalogUtil.buildIcebergCatalog(p.getProperty("floe.name", "floe"), catalogProps, null);

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(p.getProperty("floe.host", "127.0.0.1"));
    connector.setPort(Integer.parseInt(p.getProperty("floe.port", "8181")));
    server.addConnector(connector);
    ServletContextHandler ctx = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    ctx.setContextPath("/");
    ctx.addFilter(new FilterHolder(new Guard(p)), "/*", EnumSet.of(DispatcherType.REQUEST));
    ctx.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTCatalogAdapter(catalog))), "/*");
    server.setHandler(ctx);
    server.start();
    System.out.println(
        "floe-rest-catalog ready on http://" + connector.getHost() + ":" + connector.getLocalPort());
    System.out.flush();
    server.join();
  }

  /**
   * StatusRecorder remembers the status the client got. RESTCatalogServlet
   * writes an error response (404, 409, …) and then sets 500 on the
   * committed response, which Jetty ignores; getStatus() would report the
   * 500 the client never saw.
   */
  static final class StatusRecorder extends HttpServletResponseWrapper {
    private int sent = 200;

    StatusRecorder(HttpServletResponse r) {
      super(r);
    }

    @Override
    public void setStatus(int sc) {
      if (!isCommitted()) {
        sent = sc;
      }
      super.setStatus(sc);
    }

    int sent() {
      return sent;
    }
  }

  /** Guard authenticates every request, answers token requests and logs. */
  static final class Guard implements Filter {
    private final String clientId;
    private final String clientSecret;
    private final String staticToken;
    private final String tokenKey;
    private final Set<String> warehouses = new HashSet<>();

    Guard(Properties p) {
      String cred = p.getProperty("floe.credential", "");
      int colon = cred.indexOf(':');
      clientId = colon < 0 ? cred : cred.substring(0, colon);
      clientSecret = colon < 0 ? "" : cred.substring(colon + 1);
      staticToken = p.getProperty("floe.token", "");
      tokenKey = p.getProperty("floe.token-key", "");
      for (String w : p.getProperty("floe.warehouses", "").split(",")) {
        if (!w.isBlank()) {
          warehouses.add(w.trim());
        }
      }
    }

    @Override
    public void doFilter(ServletRequest sreq, ServletResponse sresp, FilterChain chain)
        throws IOException, ServletException {
      HttpServletRequest req = (HttpServletRequest) sreq;
      StatusRecorder resp = new StatusRecorder((HttpServletResponse) sresp);
      long start = System.nanoTime();
      String path = req.getRequestURI();
      try {
        if (path.endsWith("/v1/oauth/tokens")) {
          token(req, resp);
        } else if (!authorized(req)) {
          error(resp, 401, "NotAuthorizedException", "missing or invalid bearer token");
        } else if (path.endsWith("/v1/config") && !warehouseServed(req.getParameter("warehouse"))) {
          error(
              resp,
              400,
              "BadRequestException",
              "warehouse " + req.getParameter("warehouse") + " is not served by this catalog");
        } else {
          chain.doFilter(req, resp);
        }
      } finally {
        System.out.printf(
            "request %s %s %d %.1fms%n",
            req.getMethod(), path, resp.sent(), (System.nanoTime() - start) / 1e6);
      }
    }

    private boolean warehouseServed(String w) {
      return w == null || w.isEmpty() || warehouses.isEmpty() || warehouses.contains(w);
    }

    private boolean authorized(HttpServletRequest req) {
      String h = req.getHeader("Authorization");
      if (h == null || !h.regionMatches(true, 0, "Bearer ", 0, 7)) {
        return false;
      }
      String tok = h.substring(7).trim();
      return (!staticToken.isEmpty() && tok.equals(staticToken))
          || (!clientId.isEmpty() && tok.equals(issued(clientId)));
    }

    private String issued(String client) {
      try {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        md.update(tokenKey.getBytes(StandardCharsets.UTF_8));
        md.update((byte) 0);
        md.update(client.getBytes(StandardCharsets.UTF_8));
        return "floe-" + HexFormat.of().formatHex(md.digest());
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException(e);
      }
    }

    // token implements the client_credentials grant of the Iceberg REST
    // spec's /v1/oauth/tokens, with the credentials checked.
    private void token(HttpServletRequest req, HttpServletResponse resp) throws IOException {
      Map<String, String> form = new HashMap<>();
      String body = new String(req.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      for (String pair : body.split("&")) {
        int eq = pair.indexOf('=');
        if (eq > 0) {
          form.put(
              URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
              URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
        }
      }
      String id = form.getOrDefault("client_id", "");
      String secret = form.getOrDefault("client_secret", "");
      // Basic auth is the other way OAuth2 clients send credentials.
      String h = req.getHeader("Authorization");
      if (id.isEmpty() && h != null && h.regionMatches(true, 0, "Basic ", 0, 6)) {
        String dec =
            new String(
                java.util.Base64.getDecoder().decode(h.substring(6).trim()),
                StandardCharsets.UTF_8);
        int colon = dec.indexOf(':');
        if (colon >= 0) {
          id = dec.substring(0, colon);
          secret = dec.substring(colon + 1);
        }
      }
      resp.setContentType("application/json");
      if (!"client_credentials".equals(form.get("grant_type"))) {
        resp.setStatus(400);
        resp.getWriter()
            .write("{\"error\":\"unsupported_grant_type\",\"error_description\":\"only client_credentials\"}");
        return;
      }
      if (clientId.isEmpty() || !clientId.equals(id) || !clientSecret.equals(secret)) {
        resp.setStatus(401);
        resp.getWriter()
            .write("{\"error\":\"invalid_client\",\"error_description\":\"unknown client or wrong secret\"}");
        return;
      }
      resp.setStatus(200);
      resp.getWriter()
          .write(
              "{\"access_token\":\""
                  + issued(id)
                  + "\",\"token_type\":\"bearer\",\"expires_in\":86400,"
                  + "\"issued_token_type\":\"urn:ietf:params:oauth:token-type:access_token\"}");
    }

    private static void error(HttpServletResponse resp, int code, String type, String msg)
        throws IOException {
      resp.setStatus(code);
      resp.setContentType("application/json");
      resp.getWriter()
          .write(
              "{\"error\":{\"message\":\""
                  + msg.replace("\"", "'")
                  + "\",\"type\":\""
                  + type
                  + "\",\"code\":"
                  + code
                  + "}}");
    }
  }
}
