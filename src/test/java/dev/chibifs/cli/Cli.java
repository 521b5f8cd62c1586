package dev.chibifs.cli;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** Runs chibifs in-process against a temp CHIBI_HOME, capturing exit code and output. */
final class Cli {

    /** Fails with the whole result (its output and error) where the exit code is not {@code code}. */
    static void assertExit(int code, Result r) {
        org.junit.jupiter.api.Assertions.assertEquals(code, r.code(), r.toString());
    }

    /** What one run left behind. */
    record Result(int code, byte[] outBytes, String err) {
        String out() {
            return new String(outBytes, StandardCharsets.UTF_8);
        }

        @Override
        public String toString() {
            return "exit " + code + ", out: " + out() + ", err: " + err;
        }
    }

    final Path home;

    Cli(Path home) {
        this.home = home;
    }

    Result run(String... args) {
        return run(Map.of(), new byte[0], args);
    }

    Result runWithStdin(byte[] stdin, String... args) {
        return run(Map.of(), stdin, args);
    }

    Result runWithEnv(Map<String, String> env, String... args) {
        return run(env, new byte[0], args);
    }

    Result run(Map<String, String> extraEnv, byte[] stdin, String... args) {
        return run(extraEnv, new ByteArrayInputStream(stdin), args);
    }

    Result run(Map<String, String> extraEnv, java.io.InputStream stdin, String... args) {
        Map<String, String> env = new HashMap<>();
        env.put("CHIBI_HOME", home.toString());
        env.putAll(extraEnv);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.commandLine(new Terminal(env, stdin, out, err)).execute(args);
        return new Result(code, out.toByteArray(), err.toString(StandardCharsets.UTF_8));
    }

    /** The store file behind a VFS path. */
    Path file(String vfsPath) {
        return home.resolve("vfs").resolve(vfsPath.substring(1));
    }

    /** Puts a file straight into the store, as chibi would have left it. */
    void put(String vfsPath, String content) throws IOException {
        put(vfsPath, content.getBytes(StandardCharsets.UTF_8));
    }

    void put(String vfsPath, byte[] content) throws IOException {
        Path p = file(vfsPath);
        Files.createDirectories(p.getParent());
        Files.write(p, content);
    }

    String read(String vfsPath) throws IOException {
        return Files.readString(file(vfsPath));
    }

    boolean exists(String vfsPath) {
        return Files.exists(file(vfsPath));
    }
}
