package dev.chibifs.store.s3;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Properties;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.BlobStores;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.blobstore.BlobStore;

/**
 * A real S3 server in the test JVM: s3proxy over its file system backend in {@code dir}, on
 * 127.0.0.1 only, with signed requests. Stopping and starting it again keeps the objects and the
 * port, as an S3 endpoint that was unreachable for a while.
 */
final class S3Server implements AutoCloseable {

    static final String ACCESS_KEY = "chibi-test";
    static final String SECRET_KEY = "chibi-test-secret";
    private static final Duration START_LIMIT = Duration.ofSeconds(20);

    private final Path dir;
    private S3Proxy proxy;
    private int port;

    S3Server(Path dir) throws Exception {
        this.dir = dir;
        start();
    }

    void start() throws Exception {
        java.nio.file.Files.createDirectories(dir);
        Properties props = new Properties();
        props.setProperty("jclouds.filesystem.basedir", dir.toString());
        BlobStore store = BlobStores.create("filesystem-nio2", props);
        proxy = S3Proxy.builder()
                .blobStore(store)
                .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
                .endpoint(URI.create("http://127.0.0.1:" + port))
                .build();
        proxy.start();
        Instant limit = Instant.now().plus(START_LIMIT);
        // s3proxy starts Jetty on a thread of its own and says so only through its state
        while (!proxy.getState().equals("STARTED")) {
            if (Instant.now().isAfter(limit)) {
                throw new IOException("s3proxy did not start within " + START_LIMIT + ": " + proxy.getState());
            }
            Thread.onSpinWait();
        }
        port = proxy.getPort();
    }

    void stop() throws Exception {
        proxy.stop();
    }

    URI endpoint() {
        return URI.create("http://127.0.0.1:" + port);
    }

    /** The environment an AWS tool would be run with against this server. */
    Map<String, String> env() {
        return Map.of("AWS_ACCESS_KEY_ID", ACCESS_KEY, "AWS_SECRET_ACCESS_KEY", SECRET_KEY,
                "AWS_REGION", "us-east-1", "AWS_ENDPOINT_URL_S3", endpoint().toString());
    }

    /** A new, empty bucket. */
    void createBucket(String name) throws IOException {
        if (!java.nio.file.Files.isDirectory(dir.resolve(name))) {
            java.nio.file.Files.createDirectories(dir.resolve(name));
        }
    }

    @Override
    public void close() throws Exception {
        proxy.stop();
    }
}
