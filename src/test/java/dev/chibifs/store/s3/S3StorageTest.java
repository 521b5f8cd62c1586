package dev.chibifs.store.s3;

import dev.chibifs.store.Storage;
import dev.chibifs.store.StorageBehaviourSuite;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/**
 * The S3 store against the shared behaviour suite, over a real S3 server. Uploads go at once and
 * every listing is asked of S3 again (no debounce, no validity), so that each case also runs through
 * the merge of the local layer with what S3 says while the write-back is at work.
 */
class S3StorageTest extends StorageBehaviourSuite {

    @TempDir
    static Path temp;
    static S3Server server;
    private static final AtomicInteger STORES = new AtomicInteger();

    @BeforeAll
    static void startServer() throws Exception {
        server = new S3Server(temp.resolve("s3"));
        server.createBucket("suite");
    }

    @AfterAll
    static void stopServer() throws Exception {
        server.close();
    }

    @Override
    protected Storage newStorage() throws IOException {
        int n = STORES.incrementAndGet();
        S3Options o = S3Options.defaults(temp.resolve("cache" + n), server.env())
                .withFlushAfter(Duration.ZERO).withValidity(Duration.ZERO);
        return S3Storage.open("s3://suite/store" + n, o);
    }

    @Override
    protected boolean hardLinks() {
        return false;
    }

    @Override
    protected boolean exchanges() {
        return false;
    }

    /** An object is all S3 holds: no symbolic links, fifos or sockets. */
    @Override
    protected boolean specialNames() {
        return false;
    }
}
