package dev.chibifs.store.s3;

import java.nio.file.Path;

/**
 * The tests' S3 server ({@link S3Server}) as a program, for {@code scripts/s3-loopback.sh}: trying
 * the S3 store, and benchmarking it, against the very server its tests run against. Plain s3proxy
 * over its file system backend is not atomic as S3 is (a listing names an object being put as
 * {@code <name>-<uuid>}); under load a mount then met names nobody made ({@code mv} of a directory
 * failing with ENOENT, {@code rm -rf} with ENOTEMPTY), which S3Server's backend rules out.
 *
 * <p>Usage: {@code S3Loopback --dir DIR [--port N]}; the credentials it accepts are
 * {@code AWS_ACCESS_KEY_ID} and {@code AWS_SECRET_ACCESS_KEY} from the environment (never the
 * command line), else the tests' fixed ones. Prints its endpoint once it answers, and serves
 * until the process is stopped.
 */
final class S3Loopback {

    private S3Loopback() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = null;
        int port = 0;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) {
                usage("'" + a + "' needs a value");
            }
            switch (a) {
                case "--dir" -> dir = Path.of(args[++i]);
                case "--port" -> port = port(args[++i]);
                default -> usage("unknown option '" + a + "'");
            }
        }
        if (dir == null) {
            usage("--dir is required");
        }
        String access = System.getenv().getOrDefault("AWS_ACCESS_KEY_ID", S3Server.ACCESS_KEY);
        String secret = System.getenv().getOrDefault("AWS_SECRET_ACCESS_KEY", S3Server.SECRET_KEY);
        S3Server server = new S3Server(dir, port, access, secret);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                server.close();
            } catch (Exception e) {
                System.err.println("S3Loopback: stopping: " + e);
            }
        }));
        System.out.println(server.endpoint());
        System.out.flush();
        Thread.currentThread().join();
    }

    private static int port(String value) {
        try {
            int p = Integer.parseInt(value);
            if (p >= 0 && p <= 65535) {
                return p;
            }
        } catch (NumberFormatException e) {
            // below
        }
        usage("--port '" + value + "' is not a port number (0 to 65535)");
        return 0;
    }

    private static void usage(String why) {
        System.err.println("S3Loopback: " + why + "; usage: S3Loopback --dir DIR [--port N]");
        System.exit(2);
    }
}
