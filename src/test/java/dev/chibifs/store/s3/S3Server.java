package dev.chibifs.store.s3;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.BlobStores;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.blobstore.BlobStore;
import org.gaul.s3proxy.blobstore.ForwardingBlobStore;
import org.gaul.s3proxy.blobstore.HttpResponse;
import org.gaul.s3proxy.blobstore.HttpResponseException;
import org.gaul.s3proxy.blobstore.domain.Blob;
import org.gaul.s3proxy.blobstore.domain.BlobMetadata;
import org.gaul.s3proxy.blobstore.domain.MultipartPart;
import org.gaul.s3proxy.blobstore.domain.MultipartUpload;
import org.gaul.s3proxy.blobstore.domain.PageSet;
import org.gaul.s3proxy.blobstore.domain.StorageMetadata;
import org.gaul.s3proxy.blobstore.options.CopyOptions;
import org.gaul.s3proxy.blobstore.options.GetOptions;
import org.gaul.s3proxy.blobstore.options.ListContainerOptions;
import org.gaul.s3proxy.blobstore.options.PutOptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real S3 server in the test JVM: s3proxy over its file system backend in {@code dir}, on
 * 127.0.0.1 only, with signed requests. Stopping and starting it again keeps the objects and the
 * port, as an S3 endpoint that was unreachable for a while.
 *
 * <p>A test class shares one: {@code @RegisterExtension static final S3Server server =
 * S3Server.perClass("bucket")} starts it, with those buckets, in a directory of its own before the
 * class's first test (and its {@code @BeforeAll} methods), and stops it and removes the directory
 * after the last.
 */
final class S3Server implements AutoCloseable, BeforeAllCallback, AfterAllCallback {

    static final String ACCESS_KEY = "chibi-test";
    static final String SECRET_KEY = "chibi-test-secret";
    private static final Duration START_LIMIT = Duration.ofSeconds(20);

    private Path dir;
    private final String[] buckets;
    private S3Proxy proxy;
    private int port;
    private String accessKey = ACCESS_KEY;
    private String secretKey = SECRET_KEY;

    S3Server(Path dir) throws Exception {
        this.dir = dir;
        this.buckets = new String[0];
        start();
    }

    /**
     * A server on {@code port} of 127.0.0.1 (0: a free one) that signs with these credentials, for
     * {@link S3Loopback}: the same server the tests use, outside them.
     */
    S3Server(Path dir, int port, String accessKey, String secretKey) throws Exception {
        this.dir = dir;
        this.buckets = new String[0];
        this.port = port;
        this.accessKey = accessKey;
        this.secretKey = secretKey;
        start();
    }

    private S3Server(String... buckets) {
        this.buckets = buckets;
    }

    /** A server for one test class, registered as its extension (see the class comment). */
    static S3Server perClass(String... buckets) {
        return new S3Server(buckets);
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        dir = java.nio.file.Files.createTempDirectory("chibifs-s3-");
        start();
        for (String b : buckets) {
            createBucket(b);
        }
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        close();
        try (var paths = java.nio.file.Files.walk(dir)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                java.nio.file.Files.delete(p);
            }
        }
    }

    void start() throws Exception {
        if (port == 0) {
            port = portOutsideEphemeralRange();
        }
        java.nio.file.Files.createDirectories(dir);
        Properties props = new Properties();
        props.setProperty("jclouds.filesystem.basedir", dir.toString());
        backend = new OneAtATime(BlobStores.create("filesystem-nio2", props), this);
        BlobStore store = backend;
        proxy = S3Proxy.builder()
                .blobStore(store)
                .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, accessKey, secretKey)
                .endpoint(URI.create("http://127.0.0.1:" + port))
                .build();
        answerOnSkewedClock(proxy);
        refusingKeyByKey(proxy);
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

    /**
     * A free port of 127.0.0.1 below the kernel's ephemeral range. The server keeps its port across
     * {@link #stop} and {@link #start}, and a port from that range was taken meanwhile by a client's
     * own connection to it (a daemon retrying S3 while it was away: a TCP connect from that very
     * port to itself succeeds), so the restart failed "Address already in use" and every test
     * after it met S3 away (CI, session 81).
     */
    private static int portOutsideEphemeralRange() throws IOException {
        int low = 32768;
        try {
            String range = java.nio.file.Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim();
            low = Integer.parseInt(range.split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            // Linux's default range starts there
        }
        int from = Math.max(1024, low / 2);
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 100 && low > from; attempt++) {
            int candidate = random.nextInt(from, low);
            try (java.net.ServerSocket probe = new java.net.ServerSocket()) {
                probe.bind(new java.net.InetSocketAddress("127.0.0.1", candidate));
                return candidate;
            } catch (IOException taken) {
                // another listener has it: try another
            }
        }
        return 0; // a free one from the ephemeral range, as before
    }

    /** How far this server's clock is from the real one: see {@link #skewClock}. */
    private volatile Duration skew = Duration.ZERO;

    /**
     * From now on this server's clock is {@code by} off the real one (negative: behind), as an S3
     * service whose clock disagrees with its clients': the Date of its answers, and the LastModified
     * of the objects it stores from now (put, copied, completed), are on that clock. Moving it on
     * later stands for time passing on S3 without waiting for it.
     */
    void skewClock(Duration by) {
        skew = by;
    }

    private Instant now() {
        return Instant.now().plus(skew);
    }

    /**
     * Jetty, which s3proxy runs on, stamps each answer's Date from the real clock: here from this
     * server's own. Its connectors are made with the proxy, before it starts, and are not exposed.
     */
    private void answerOnSkewedClock(S3Proxy p) throws ReflectiveOperationException {
        for (var c : jetty(p).getConnectors()) {
            var http = c.getConnectionFactory(org.gaul.shaded.org.eclipse.jetty.server.HttpConnectionFactory.class);
            if (http != null) {
                http.getHttpConfiguration().setSendDateHeader(false);
                http.getHttpConfiguration().addCustomizer((request, headers) -> {
                    headers.put("Date", java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME
                            .format(now().atZone(java.time.ZoneOffset.UTC)));
                    return request;
                });
            }
        }
    }

    /**
     * An object just stored gets its LastModified from this server's clock: s3proxy's file system
     * backend gives the time of its file, stamped by the real clock. Under the backend's lock.
     */
    private void stamp(String container, String name) {
        if (skew.isZero()) {
            return;
        }
        try {
            java.nio.file.Files.setLastModifiedTime(dir.resolve(container).resolve(name), java.nio.file.attribute.FileTime.from(now()));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * s3proxy's file system backend with its namespace operations one at a time. It is not atomic
     * as S3 is: a PUT writes a temporary file beside its key and renames it, so a listing meanwhile
     * names the temporary file ("a-<uuid>"), and a DELETE removes the directories it leaves empty,
     * under a PUT about to write there. Under load, tests met both (a listing with a name nobody
     * made; a PUT failing six attempts running). s3proxy looks through a ForwardingBlobStore to its
     * backend for what it supports (conditional writes), so the lock is one.
     */
    private static final class OneAtATime extends ForwardingBlobStore {
        /** The blob s3proxy keeps for each upload in parts underway over this backend: no PUT of an object. */
        private static final String UPLOAD_STUB = ".s3proxy-mpu-stub-";

        private final S3Server server;

        OneAtATime(BlobStore store, S3Server server) {
            super(store);
            this.server = server;
        }

        @Override
        public PageSet<? extends StorageMetadata> list(String container, ListContainerOptions options) {
            String prefix = String.valueOf(options.prefix());
            server.listsAsked.add(prefix);
            server.heldLists.waitIfHeld(prefix, -1);
            PageSet<? extends StorageMetadata> page;
            synchronized (this) {
                page = super.list(container, options);
            }
            // the same marker, so the same continuation token, at every page
            return server.loopLists.take(prefix) ? new PageSet<>(page.entries(), "looping-marker") : page;
        }

        @Override
        public synchronized boolean blobExists(String container, String name) {
            return super.blobExists(container, name);
        }

        @Override
        public String putBlob(String container, Blob blob, PutOptions options) {
            // before the body is read: a held PUT's sender fills the socket's buffers and waits
            server.heldPuts.waitIfHeld(blob.getMetadata().name(), -1);
            if (server.refusedPuts.take(blob.getMetadata().name())) {
                throw new HttpResponseException(new HttpResponse(403));
            }
            if (server.failedPutsOf.take(blob.getMetadata().name())) {
                throw new HttpResponseException(new HttpResponse(500));
            }
            synchronized (this) {
                refuseUnlessAsConditioned(container, blob.getMetadata().name(), options);
                if (blob.getMetadata().name().startsWith(UPLOAD_STUB)) {
                    return super.putBlob(container, blob, options);
                }
                String etag = failingAsAsked(() -> super.putBlob(container, blob, options),
                        () -> new IllegalStateException("a PUT failed on purpose (S3Server.failPuts)"));
                server.stored.add(blob.getMetadata().name());
                server.stamp(container, blob.getMetadata().name());
                if (server.lostPutAnswers.take(blob.getMetadata().name())) {
                    throw new RuntimeException("a PUT landed, its answer lost on purpose (S3Server.losePutAnswers)");
                }
                return etag;
            }
        }

        /**
         * S3 checks a conditional PUT's If-Match or If-None-Match as it stores the object; s3proxy checks
         * it before, apart from the store, so a PUT held here ({@link #holdPuts}) would land over
         * another that came meanwhile. Checked again here, as S3 does: 412.
         */
        private void refuseUnlessAsConditioned(String container, String name, PutOptions options) {
            if (options == null || (options.ifMatch() == null && options.ifNoneMatch() == null)) {
                return;
            }
            BlobMetadata now = super.blobMetadata(container, name);
            String etag = now == null ? null : unquoted(now.eTag());
            if (etag == null && name.endsWith("/") && super.blobExists(container, name)) {
                // a directory's marker, which the file system backend keeps as a directory and gives
                // no metadata of; a directory made by an object below it has no marker, as on S3
                etag = EMPTY_MD5;
            }
            boolean refused = options.ifMatch() != null
                    ? etag == null || !(options.ifMatch().equals("*") || unquoted(options.ifMatch()).equals(etag))
                    : etag != null;
            if (refused) {
                throw new HttpResponseException(new HttpResponse(412));
            }
        }

        /** The ETag of an empty object, a marker's. */
        private static final String EMPTY_MD5 = "d41d8cd98f00b204e9800998ecf8427e";

        private volatile Runnable beforeDeleteObjects;

    /**
     * Runs {@code what} (once) as the next DeleteObjects {@link #takeConditionalDeletes} answers
     * arrives, before its conditions are looked at: another host's write between a host's check of
     * an object and its delete. Null: none.
     */
    void beforeDeleteObjects(Runnable what) {
        beforeDeleteObjects = what;
    }

    private volatile java.util.function.Consumer<String> beforeCopy;

    /**
     * Runs {@code what} with the new name of each copy as it arrives, before it is made, holding
     * the copies after it (a host killed during a move's copies); null: none.
     */
    void beforeCopy(java.util.function.Consumer<String> what) {
        beforeCopy = what;
    }

    private static String unquoted(String etag) {
            return etag == null ? null : etag.replace("\"", "");
        }

        /** A part of an upload: held as a PUT is, by its object's name and its number ({@link #holdParts}). */
        @Override
        public MultipartPart uploadMultipartPart(MultipartUpload mpu, int partNumber, java.io.InputStream content, long length,
                                                 com.google.common.hash.HashCode md5) {
            server.heldParts.waitIfHeld(mpu.blobName(), partNumber);
            MultipartPart made = super.uploadMultipartPart(mpu, partNumber, content, length, md5);
            server.uploadEvents.add("part " + partNumber + " of " + mpu.blobName());
            return made;
        }

        @Override
        public void abortMultipartUpload(MultipartUpload mpu) {
            server.uploadEvents.add("abort of " + mpu.blobName());
            super.abortMultipartUpload(mpu);
        }

        /**
         * An upload in parts lands at its completion: a PUT as {@link #failPuts} counts them. It fails
         * as S3 does when it fails (500), which the client retries.
         */
        @Override
        public String completeMultipartUpload(MultipartUpload mpu, List<MultipartPart> parts) {
            server.heldCompletions.waitIfHeld(mpu.blobName(), -1);
            synchronized (this) {
                String etag = failingAsAsked(() -> super.completeMultipartUpload(mpu, parts),
                        () -> new RuntimeException("a completion failed on purpose (S3Server.failPuts)"));
                server.stamp(mpu.containerName(), mpu.blobName());
                return etag;
            }
        }

        private String failingAsAsked(java.util.function.Supplier<String> put,
                                      java.util.function.Supplier<RuntimeException> failure) {
            if (server.putsToFail > 0) {
                server.putsToFail--;
                if (server.firstFailingPutLands) {
                    server.firstFailingPutLands = false;
                    put.get();
                }
                throw failure.get();
            }
            return put.get();
        }

        @Override
        public synchronized String copyBlob(String from, String fromName, String to, String toName, CopyOptions options) {
            java.util.function.Consumer<String> hook = server.beforeCopy;
            if (hook != null) {
                hook.accept(toName);
            }
            String etag = super.copyBlob(from, fromName, to, toName, options);
            server.stamp(to, toName);
            return etag;
        }

        @Override
        public synchronized BlobMetadata blobMetadata(String container, String name) {
            if (server.failedHeads.take(name)) {
                throw new RuntimeException("a HEAD failed on purpose (S3Server.failHeads)");
            }
            BlobMetadata m = super.blobMetadata(container, name);
            return m == null || !server.noEtags.take(name) ? m : m.toBuilder().eTag(null).build();
        }

        @Override
        public Blob getBlob(String container, String name, GetOptions options) {
            long start = options == null || options.ranges().isEmpty() ? -1 : rangeStart(options.ranges().get(0));
            synchronized (server.rangesAsked) {
                server.rangesAsked.add(name + "@" + start);
            }
            server.heldRanges.waitIfHeld(name, start);
            HeldGet held = server.heldGet.get();
            if (held != null && held.passing().getAndDecrement() == 0 && server.heldGet.compareAndSet(held, null)) {
                held.reached().countDown();
                try {
                    held.release().await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            Blob blob;
            synchronized (this) {
                blob = super.getBlob(container, name, options);
            }
            return blob == null || !server.cutGets.take(name) ? blob : cutShort(blob);
        }

        /** The blob with its length as it is and half its bytes: the answer's Content-Length says more than comes. */
        private static Blob cutShort(Blob blob) {
            try (java.io.InputStream in = blob.getPayload()) {
                byte[] all = in.readAllBytes();
                return blob.toBuilder().payload(new java.io.ByteArrayInputStream(all, 0, all.length / 2))
                        .contentLength(all.length).build();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        /** A DELETE held ({@link #holdDeletes}) before the object goes ({@link #BEFORE_REMOVAL}) or after, unanswered. */
        @Override
        public void removeBlob(String container, String name) {
            server.deletesAsked.add("DELETE " + name);
            if (server.refusedByPolicy.take(name)) {
                throw new HttpResponseException(new HttpResponse(403));
            }
            remove(container, name);
        }

        private void remove(String container, String name) {
            server.heldDeletes.waitIfHeld(name, BEFORE_REMOVAL);
            if (server.failedDeletes.take(name)) {
                throw new RuntimeException("a DELETE failed on purpose (S3Server.failDeletes)");
            }
            synchronized (this) {
                super.removeBlob(container, name);
            }
            server.heldDeletes.waitIfHeld(name, AFTER_REMOVAL);
            if (server.lostDeleteAnswers.take(name)) {
                throw new RuntimeException("a DELETE done, its answer lost on purpose (S3Server.loseDeleteAnswers)");
            }
            if (server.cutDeleteAnswers.take(name)) {
                cutConnection();
                throw new RuntimeException("a DELETE done, its connection cut on purpose (S3Server.cutDeleteAnswers)");
            }
        }

        /**
         * A DeleteObjects (a POST) meets the faults and holds a DELETE of each of its keys meets,
         * unless it is refused whole ({@link #refuseDeleteObjects}).
         */
        @Override
        public void removeBlobs(String container, Iterable<String> names) {
            for (String name : names) {
                if (server.refusedDeleteObjects.take(name)) {
                    server.deletesAsked.add("refused DeleteObjects " + name);
                    throw new HttpResponseException(new HttpResponse(server.deleteObjectsRefusedWith));
                }
            }
            for (String name : names) {
                server.deletesAsked.add("DeleteObjects " + name);
                remove(container, name);
            }
        }

        /**
         * Closes the connection the request this thread serves came on, unanswered: Jetty runs a
         * request's handler on the thread that read it, which knows its connection.
         */
        private static void cutConnection() {
            var connection = org.gaul.shaded.org.eclipse.jetty.server.internal.HttpConnection.getCurrentConnection();
            if (connection == null) {
                throw new IllegalStateException("no connection known to this thread to cut");
            }
            connection.getEndPoint().close();
        }
    }

    private OneAtATime backend;
    /** Guarded by the backend's lock (OneAtATime). */
    private int putsToFail;
    private boolean firstFailingPutLands;

    /**
     * The next {@code count} PUTs (and completions of uploads in parts) fail (500, which the client retries); with {@code firstLands} the
     * first of them is stored before it fails: an upload whose every attempt the client saw fail,
     * though one of them landed.
     */
    void failPuts(int count, boolean firstLands) {
        synchronized (backend) {
            putsToFail = count;
            firstFailingPutLands = firstLands;
        }
    }

    /**
     * A GET held by the server: {@code reached} once it arrived, answered once {@code release} is;
     * {@code passing} GETs go by before it.
     */
    record HeldGet(java.util.concurrent.atomic.AtomicInteger passing, java.util.concurrent.CountDownLatch reached,
                   java.util.concurrent.CountDownLatch release) {
    }

    private final java.util.concurrent.atomic.AtomicReference<HeldGet> heldGet = new java.util.concurrent.atomic.AtomicReference<>();

    /** The next GET to arrive waits until the test lets it go: a download that takes as long as the test needs. */
    HeldGet holdNextGet() {
        return holdGetAfter(0);
    }

    /** Requests held by the server: {@code reached} counts them down as they come, all answered once {@code release} is. */
    record HeldRequests(java.util.function.BiPredicate<String, Long> which, java.util.concurrent.CountDownLatch reached,
                      java.util.concurrent.CountDownLatch release) {
        /** Requests {@code which} says are held until released; {@code expected} of them awaited. */
        static HeldRequests of(java.util.function.BiPredicate<String, Long> which, int expected) {
            return new HeldRequests(which, new java.util.concurrent.CountDownLatch(expected), new java.util.concurrent.CountDownLatch(1));
        }

        static final HeldRequests NONE = new HeldRequests((name, from) -> false, new java.util.concurrent.CountDownLatch(0),
                new java.util.concurrent.CountDownLatch(0));

        void waitIfHeld(String name, long from) {
            if (which.test(name, from)) {
                reached.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /** Faults the server answers some requests with, a number of times (-1: every time), for names a test chooses. */
    static final class Faults {
        private java.util.function.Predicate<String> which = name -> false;
        private int left;

        synchronized void set(java.util.function.Predicate<String> which, int times) {
            this.which = which;
            this.left = times;
        }

        /** Whether the fault is set for any name at all. */
        synchronized boolean any() {
            return left != 0;
        }

        /** Whether the request for {@code name} gets the fault (counted). */
        synchronized boolean take(String name) {
            if (left == 0 || !which.test(name)) {
                return false;
            }
            if (left > 0) {
                left--;
            }
            return true;
        }
    }

    private final Faults cutGets = new Faults();

    /**
     * The next {@code times} GETs (-1: all) of objects {@code which} names are answered with the
     * object's Content-Length and only half its bytes, then the connection closes: a body cut short.
     */
    void cutGets(java.util.function.Predicate<String> which, int times) {
        cutGets.set(which, times);
    }

    private final Faults lostPutAnswers = new Faults();

    /** The next {@code times} PUTs (-1: all) of objects {@code which} names land, then are answered 500, which the client retries. */
    void losePutAnswers(java.util.function.Predicate<String> which, int times) {
        lostPutAnswers.set(which, times);
    }

    private final Faults lostDeleteAnswers = new Faults();

    /** The next {@code times} DELETEs (-1: all) of one object {@code which} names remove it, then are answered 500, which the client retries. */
    void loseDeleteAnswers(java.util.function.Predicate<String> which, int times) {
        lostDeleteAnswers.set(which, times);
    }

    private final Faults failedDeletes = new Faults();

    /** The next {@code times} DELETEs (-1: all) of one object {@code which} names (alone, or in a DeleteObjects) fail undone (500). */
    void failDeletes(java.util.function.Predicate<String> which, int times) {
        failedDeletes.set(which, times);
    }

    private final Faults cutDeleteAnswers = new Faults();

    /**
     * The next {@code times} DELETEs (-1: all) of one object {@code which} names (alone, or in a
     * DeleteObjects) remove it, then the connection is closed with no answer: as a network that
     * lost the answer. The JDK's HTTP client sends a request again on its own when that happens,
     * unless it streams a body.
     */
    void cutDeleteAnswers(java.util.function.Predicate<String> which, int times) {
        cutDeleteAnswers.set(which, times);
    }

    private final Faults refusedDeleteObjects = new Faults();
    private volatile int deleteObjectsRefusedWith;

    /**
     * The next {@code times} DeleteObjects (-1: all) naming an object {@code which} names are refused
     * whole with HTTP {@code status} and no error code, nothing deleted: as a server or gateway
     * without DeleteObjects (405, 501), or one refusing it in passing (400).
     */
    void refuseDeleteObjects(java.util.function.Predicate<String> which, int status, int times) {
        deleteObjectsRefusedWith = status;
        refusedDeleteObjects.set(which, times);
    }

    private final Faults refusedByPolicy = new Faults();
    private volatile boolean conditionalDeletes;

    /**
     * DeleteObjects takes each key's ETag element as AWS does (conditional deletes): a key whose
     * object is another version is left, with an {@code <Error>} of code PreconditionFailed. s3proxy
     * refuses the element (501 NotImplemented).
     */
    void takeConditionalDeletes(boolean take) {
        conditionalDeletes = take;
    }

    private volatile Runnable beforeDeleteObjects;

    /**
     * Runs {@code what} (once) as the next DeleteObjects {@link #takeConditionalDeletes} answers
     * arrives, before its conditions are looked at: another host's write between a host's check of
     * an object and its delete. Null: none.
     */
    void beforeDeleteObjects(Runnable what) {
        beforeDeleteObjects = what;
    }

    private volatile java.util.function.Consumer<String> beforeCopy;

    /**
     * Runs {@code what} with the new name of each copy as it arrives, before it is made, holding
     * the copies after it (a host killed during a move's copies); null: none.
     */
    void beforeCopy(java.util.function.Consumer<String> what) {
        beforeCopy = what;
    }

    private static String unquoted(String etag) {
        return etag == null ? "" : etag.replace("\"", "").replace("&quot;", "");
    }

    /**
     * The next {@code times} deletes (-1: all) of objects {@code which} names are refused as AWS
     * refuses those a bucket policy denies: a DELETE with 403, a DeleteObjects with 200 and an
     * {@code <Error>} of code AccessDenied for each such key (the others of it deleted), which
     * s3proxy never answers.
     */
    void refuseDeletesAsAPolicyDoes(java.util.function.Predicate<String> which, int times) {
        refusedByPolicy.set(which, times);
    }

    /**
     * Answers each DeleteObjects itself, as {@link #refuseDeletesAsAPolicyDoes} says: s3proxy deletes
     * a batch whole or fails it whole. Its handler is set with the proxy, before it starts.
     */
    private void refusingKeyByKey(S3Proxy p) throws ReflectiveOperationException {
        var jetty = jetty(p);
        jetty.setHandler(new org.gaul.shaded.org.eclipse.jetty.server.Handler.Wrapper(jetty.getHandler()) {
            @Override
            public boolean handle(org.gaul.shaded.org.eclipse.jetty.server.Request request,
                    org.gaul.shaded.org.eclipse.jetty.server.Response response,
                    org.gaul.shaded.org.eclipse.jetty.util.Callback callback) throws Exception {
                String query = request.getHttpURI().getQuery();
                if (!refusedByPolicy.any() && !conditionalDeletes || !"POST".equals(request.getMethod()) || query == null
                        || !query.startsWith("delete")) {
                    return super.handle(request, response, callback);
                }
                Runnable before = beforeDeleteObjects;
                if (before != null) {
                    beforeDeleteObjects = null;
                    before.run();
                }
                String container = request.getHttpURI().getPath().replaceAll("^/|/$", "");
                String body = org.gaul.shaded.org.eclipse.jetty.io.Content.Source.asString(request, java.nio.charset.StandardCharsets.UTF_8);
                StringBuilder answer = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
                        + "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
                var objects = java.util.regex.Pattern.compile("<Key>([^<]*)</Key>(?:<ETag>([^<]*)</ETag>)?").matcher(body);
                while (objects.find()) {
                    String name = objects.group(1);
                    String ifMatch = objects.group(2);
                    BlobMetadata there = ifMatch == null ? null : backend.blobMetadata(container, name);
                    if (there != null && !unquoted(there.eTag()).equals(unquoted(ifMatch))) {
                        deletesAsked.add("kept by its ETag in DeleteObjects " + name);
                        answer.append("<Error><Key>").append(name).append("</Key><Code>PreconditionFailed</Code>"
                                + "<Message>At least one of the pre-conditions you specified did not hold</Message></Error>");
                    } else if (refusedByPolicy.take(name)) {
                        deletesAsked.add("refused in DeleteObjects " + name);
                        answer.append("<Error><Key>").append(name).append("</Key><Code>AccessDenied</Code>"
                                + "<Message>Access Denied</Message></Error>");
                    } else {
                        deletesAsked.add("DeleteObjects " + name);
                        backend.remove(container, name);
                    }
                }
                response.setStatus(200);
                response.getHeaders().put("Content-Type", "application/xml");
                org.gaul.shaded.org.eclipse.jetty.io.Content.Sink.write(response, true, answer.append("</DeleteResult>").toString(), callback);
                return true;
            }
        });
    }

    /**
     * Every delete that came, in order: {@code DELETE <key>}, {@code DeleteObjects <key>} for each
     * key of one, {@code refused DeleteObjects <key>} for one {@link #refuseDeleteObjects} refused,
     * {@code refused in DeleteObjects <key>} for a key of one {@link #refuseDeletesAsAPolicyDoes} refused.
     */
    final List<String> deletesAsked = java.util.Collections.synchronizedList(new java.util.ArrayList<>());

    private final Faults refusedPuts = new Faults();

    /**
     * The next {@code times} PUTs (-1: all) of objects {@code which} names are refused with 403, which
     * the client does not retry: as S3 refuses a key a bucket policy denies, or one its KMS key fails.
     */
    void refusePuts(java.util.function.Predicate<String> which, int times) {
        refusedPuts.set(which, times);
    }

    private final Faults failedPutsOf = new Faults();

    /**
     * The next {@code times} PUTs (-1: all) of objects {@code which} names fail with a 500, which the
     * client retries: as s3proxy answers a name its file system cannot store.
     */
    void failPutsOf(java.util.function.Predicate<String> which, int times) {
        failedPutsOf.set(which, times);
    }

    private final Faults failedHeads = new Faults();

    /** The next {@code times} HEADs (-1: all) of objects {@code which} names fail (500, which the client retries). */
    void failHeads(java.util.function.Predicate<String> which, int times) {
        failedHeads.set(which, times);
    }

    private final Faults noEtags = new Faults();

    /** The next {@code times} HEADs (-1: all) of objects {@code which} names are answered without an ETag. */
    void noEtags(java.util.function.Predicate<String> which, int times) {
        noEtags.set(which, times);
    }

    private final Faults loopLists = new Faults();

    /** The next {@code times} listings (-1: all) of prefixes {@code which} accepts say there is more, with the same continuation token every time. */
    void loopLists(java.util.function.Predicate<String> which, int times) {
        loopLists.set(which, times);
    }

    /** The keys of the objects PUT whole, in the order the server stored them. */
    final List<String> stored = java.util.Collections.synchronizedList(new java.util.ArrayList<>());

    /** Each part stored and each upload aborted, in the order they happened. */
    final List<String> uploadEvents = java.util.Collections.synchronizedList(new java.util.ArrayList<>());

    /** The prefix of every LIST that came, in order. */
    final List<String> listsAsked = java.util.Collections.synchronizedList(new java.util.ArrayList<>());

    private volatile HeldRequests heldLists = HeldRequests.NONE;

    /** Every LIST of a prefix {@code which} accepts waits until the test lets them go. */
    HeldRequests holdLists(java.util.function.Predicate<String> which, int expected) {
        HeldRequests h = HeldRequests.of((prefix, from) -> which.test(prefix), expected);
        heldLists = h;
        return h;
    }

    private volatile HeldRequests heldDeletes = HeldRequests.NONE;
    private static final long BEFORE_REMOVAL = 0;
    private static final long AFTER_REMOVAL = 1;

    /**
     * Every DELETE of one object {@code which} names waits until the test lets them go: with
     * {@code removed} once the object has gone (S3 has done it; its answer not sent), else before.
     */
    HeldRequests holdDeletes(java.util.function.Predicate<String> which, boolean removed, int expected) {
        long at = removed ? AFTER_REMOVAL : BEFORE_REMOVAL;
        HeldRequests h = HeldRequests.of((name, when) -> when == at && which.test(name), expected);
        heldDeletes = h;
        return h;
    }

    private volatile HeldRequests heldRanges = HeldRequests.NONE;
    private volatile HeldRequests heldPuts = HeldRequests.NONE;

    /** Every PUT of an object {@code which} names waits, its body unread, until the test lets them go. */
    HeldRequests holdPuts(java.util.function.Predicate<String> which, int expected) {
        HeldRequests h = HeldRequests.of((name, from) -> which.test(name), expected);
        heldPuts = h;
        return h;
    }
    private volatile HeldRequests heldParts = HeldRequests.NONE;

    /** Every part of an upload {@code which} names (by object name and part number) waits, its body unread, until the test lets them go. */
    HeldRequests holdParts(java.util.function.BiPredicate<String, Long> which, int expected) {
        HeldRequests h = HeldRequests.of(which, expected);
        heldParts = h;
        return h;
    }

    private volatile HeldRequests heldCompletions = HeldRequests.NONE;

    /** Every completion of an upload in parts of an object {@code which} names waits, unanswered, until the test lets them go. */
    HeldRequests holdCompletions(java.util.function.Predicate<String> which, int expected) {
        HeldRequests h = HeldRequests.of((name, from) -> which.test(name), expected);
        heldCompletions = h;
        return h;
    }

    /** Every GET that came, as {@code <object name>@<first byte of its range>} (-1: the whole object), in order. */
    private final List<String> rangesAsked = new java.util.ArrayList<>();

    /**
     * Every GET {@code which} says (by object name and first byte of its range, -1 for a whole
     * object) waits until the test lets them go; {@code expected} of them are awaited.
     */
    HeldRequests holdRanges(java.util.function.BiPredicate<String, Long> which, int expected) {
        HeldRequests h = HeldRequests.of(which, expected);
        heldRanges = h;
        return h;
    }

    /** The GETs that came so far, in order (see {@link #rangesAsked}). */
    List<String> rangesAsked() {
        synchronized (rangesAsked) {
            return List.copyOf(rangesAsked);
        }
    }

    /** The first byte of a range as s3proxy passes it on ("0-99", or with "bytes=" before it). */
    private static long rangeStart(String range) {
        String r = range.startsWith("bytes=") ? range.substring(6) : range;
        int dash = r.indexOf('-');
        return dash <= 0 ? -1 : Long.parseLong(r.substring(0, dash).trim());
    }

    /** As {@link #holdNextGet}, for the GET after the next {@code others}. */
    HeldGet holdGetAfter(int others) {
        HeldGet h = new HeldGet(new java.util.concurrent.atomic.AtomicInteger(others), new java.util.concurrent.CountDownLatch(1),
                new java.util.concurrent.CountDownLatch(1));
        heldGet.set(h);
        return h;
    }

    /**
     * Goes away at once, as an endpoint that became unreachable: s3proxy's Jetty would otherwise
     * shut down gracefully, 2 s for each stop while a client kept a connection open (every test of
     * an outage), with nothing that test looks at happening meanwhile.
     */
    void stop() throws Exception {
        jetty(proxy).setStopTimeout(0);
        proxy.stop();
    }

    private static org.gaul.shaded.org.eclipse.jetty.server.Server jetty(S3Proxy p) throws ReflectiveOperationException {
        java.lang.reflect.Field f = S3Proxy.class.getDeclaredField("server");
        f.setAccessible(true);
        return (org.gaul.shaded.org.eclipse.jetty.server.Server) f.get(p);
    }

    URI endpoint() {
        return URI.create("http://127.0.0.1:" + port);
    }

    /** The environment an AWS tool would be run with against this server. */
    Map<String, String> env() {
        return Map.of("AWS_ACCESS_KEY_ID", accessKey, "AWS_SECRET_ACCESS_KEY", secretKey,
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
        stop(); // as quickly: each class's server, and each of S3CostTest's, waited 2 s to end
    }
}
