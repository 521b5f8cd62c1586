package dev.chibifs.cli;

import com.sun.net.httpserver.HttpServer;
import dev.chibifs.path.VfsPath;
import dev.chibifs.store.s3.S3Options;
import dev.chibifs.store.s3.S3Storage;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * What {@code scripts/chibifs} runs once per copy of the jar, under
 * {@code -XX:ArchiveClassesAtExit}, to make the class archive (AppCDS) that later commands and
 * daemons map instead of reading and verifying classes from the jar: every class of chibifs
 * (a daemon's too), the model of every command, and one real command ({@code ls} of a fresh
 * store, which loads the configuration, the router, the store and its native calls), and an S3
 * store's first requests. Nothing is mounted, nothing outside the directory it is given is
 * written, and nothing leaves the host.
 */
public final class ClassArchiveTraining {

    private ClassArchiveTraining() {
    }

    /** {@code args[0]}: an empty directory to use as CHIBI_HOME. */
    public static void main(String[] args) throws IOException, URISyntaxException {
        if (args.length != 1) {
            System.err.println("usage: ClassArchiveTraining EMPTY-DIR");
            System.exit(2);
        }
        loadEveryOwnClass();
        Terminal quiet = new Terminal(System.getenv(), System.in, OutputStream.nullOutputStream(),
                OutputStream.nullOutputStream());
        Main.commandLine(quiet); // every command's model, as help builds it
        int code = Main.commandLine(quiet, Main.subcommandsFor(new String[]{"ls"}))
                .execute("ls", "--home", args[0], "vfs:///");
        openS3Store(Path.of(args[0]));
        System.exit(code);
    }

    /** What a loopback stand-in for S3 answers a listing: nothing there. */
    private static final byte[] EMPTY_LISTING = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
            + "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>train</Name><Prefix></Prefix>"
            + "<KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>")
            .getBytes(StandardCharsets.UTF_8);

    /**
     * Opens, lists and writes an S3 store against a stand-in on loopback that answers every listing
     * empty and every upload done: the S3 client's classes (building, signing, HTTP, XML), about a
     * third of a second of an S3 mount's start, go into the archive too. A failure only leaves
     * them out.
     */
    private static void openS3Store(Path home) {
        HttpServer server = null;
        try {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            server.createContext("/", exchange -> {
                exchange.getRequestBody().readAllBytes();
                boolean listing = exchange.getRequestMethod().equals("GET");
                exchange.getResponseHeaders().add("ETag", "\"d41d8cd98f00b204e9800998ecf8427e\"");
                exchange.sendResponseHeaders(200, listing ? EMPTY_LISTING.length : -1);
                if (listing) {
                    exchange.getResponseBody().write(EMPTY_LISTING);
                }
                exchange.close();
            });
            server.start();
            String endpoint = "http://127.0.0.1:" + server.getAddress().getPort();
            S3Options options = S3Options.defaults(home.resolve("s3-cache"), Map.of("AWS_ACCESS_KEY_ID", "train",
                    "AWS_SECRET_ACCESS_KEY", "train", "AWS_REGION", "us-east-1"));
            try (S3Storage store = S3Storage.open("s3://train/chibifs?endpoint=" + endpoint, options)) {
                store.list(VfsPath.root());
                store.write(VfsPath.of("/trained"), new byte[]{'x'});
                store.flushAll();
            }
        } catch (IOException | RuntimeException notArchived) {
            // the archive is made without them
        } finally {
            if (server != null) {
                server.stop(0);
            }
        }
    }

    /** Loads, without initialising, every class in the jar (or directory) this class came from. */
    private static void loadEveryOwnClass() throws IOException, URISyntaxException {
        Path source = Path.of(ClassArchiveTraining.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        if (!source.toString().endsWith(".jar")) {
            return;
        }
        ClassLoader loader = ClassArchiveTraining.class.getClassLoader();
        try (JarFile jar = new JarFile(source.toFile())) {
            for (JarEntry e : java.util.Collections.list(jar.entries())) {
                String name = e.getName();
                if (name.startsWith("dev/chibifs/") && name.endsWith(".class")) {
                    try {
                        Class.forName(name.substring(0, name.length() - 6).replace('/', '.'), false, loader);
                    } catch (ClassNotFoundException | LinkageError skipped) {
                        // a class that cannot load here is simply not archived
                    }
                }
            }
        }
    }
}
