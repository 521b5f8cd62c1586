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
 * store, which loads the configuration, the router, the store and its native calls), and, for
 * the archive of a command that names an S3 store, that store's first requests. Nothing is
 * mounted, nothing outside the directory it is given is written, and nothing leaves the host.
 *
 * <p>Two archives, because a JVM maps and relocates the whole of its archive at start, every page
 * resident whether used or not: the S3 client's classes are about half of an archive that has
 * them, and a daemon of local stores would carry them for nothing.
 */
public final class ClassArchiveTraining {

    private ClassArchiveTraining() {
    }

    /**
     * Where the S3 store's own classes are in the jar: a name, not {@code S3Storage.class}, which
     * would load that class, and with it the client's, into every archive.
     */
    private static final String S3_CLASSES = "dev/chibifs/store/s3/";

    /** What {@code args[1]} is when the archive is for commands that name an S3 store. */
    static final String WITH_S3 = "s3";

    /** {@code args[0]}: an empty directory to use as CHIBI_HOME; {@code args[1]}, if any: {@value WITH_S3}. */
    public static void main(String[] args) throws IOException, URISyntaxException {
        boolean withS3 = args.length == 2 && args[1].equals(WITH_S3);
        if (args.length != 1 && !withS3) {
            System.err.println("usage: ClassArchiveTraining EMPTY-DIR [" + WITH_S3 + "]");
            System.exit(2);
        }
        Main.startUp();
        loadEveryOwnClass(withS3);
        Terminal quiet = new Terminal(System.getenv(), System.in, OutputStream.nullOutputStream(),
                OutputStream.nullOutputStream());
        Main.commandLine(quiet); // every command's model, as help builds it
        // a store to list: ls, which only reads, says there is none rather than make it
        java.nio.file.Files.createDirectories(Path.of(args[0], "vfs"));
        int code = Main.commandLine(quiet, Main.subcommandsFor(new String[]{"ls"}))
                .execute("ls", "--home", args[0], "vfs:///");
        if (withS3) {
            openS3Store(Path.of(args[0]));
        }
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

    /**
     * Loads, without initialising, every class in the jar this class came from; the S3 store's
     * only with {@code withS3}, since the archive links what it holds and linking them loads the
     * S3 client's classes they name.
     */
    private static void loadEveryOwnClass(boolean withS3) throws IOException, URISyntaxException {
        Path source = Path.of(ClassArchiveTraining.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        if (!source.toString().endsWith(".jar")) {
            return;
        }
        ClassLoader loader = ClassArchiveTraining.class.getClassLoader();
        try (JarFile jar = new JarFile(source.toFile())) {
            for (JarEntry e : java.util.Collections.list(jar.entries())) {
                String name = e.getName();
                if (name.startsWith("dev/chibifs/") && name.endsWith(".class")
                        && (withS3 || !name.startsWith(S3_CLASSES))) {
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
