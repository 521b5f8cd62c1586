package dev.chibifs.store.s3;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;
import dev.chibifs.store.ContentHash;
import dev.chibifs.sys.HasErrno;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.ApiCallAttemptTimeoutException;
import software.amazon.awssdk.core.exception.ApiCallTimeoutException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.model.CommonPrefix;
import software.amazon.awssdk.services.s3.model.CompleteMultipartUploadResponse;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.CopyObjectRequest;
import software.amazon.awssdk.services.s3.model.CopyObjectResponse;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.EncodingType;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.MetadataDirective;
import software.amazon.awssdk.services.s3.model.MultipartUpload;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Error;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;
import software.amazon.awssdk.services.s3.model.UploadPartCopyResponse;
import software.amazon.awssdk.services.s3.model.UploadPartResponse;

/**
 * The one class that speaks S3 (through the AWS SDK): objects by key, with every failure turned
 * into a one-line {@link IOException} that names the operation, the object and the reason.
 */
final class Bucket implements Closeable {

    private static final Logger LOG = LoggerFactory.getLogger(Bucket.class);

    /** What a listing says of one object. */
    record Listed(String key, long size, Instant modified, String etag) {
    }

    /**
     * One level of a listing: the objects and the common prefixes ("directories") below a prefix,
     * and when S3 answered by its own clock (its Date header, to the second; null where it sent none).
     */
    record Level(List<Listed> objects, List<String> prefixes, Instant answered) {
        Level(List<Listed> objects, List<String> prefixes) {
            this(objects, prefixes, null);
        }
    }

    /** What HEAD or GET says of one object; {@code meta} is its user metadata (x-amz-meta-*). */
    record Head(long size, Instant modified, String etag, Map<String, String> meta) {
    }

    /** The object is not what the condition of a conditional PUT said (HTTP 412). */
    static final class PreconditionFailed extends IOException {
        PreconditionFailed(String message) {
            super(message);
        }
    }

    /**
     * S3 failed or could not be reached: an I/O error (EIO), expected while the endpoint is away,
     * so a request answers EIO with this one line and no stack trace.
     */
    static class Unavailable extends IOException implements HasErrno {
        Unavailable(String message, Throwable cause) {
            super(message, cause);
        }

        @Override
        public int errno() {
            return Linux.EIO;
        }
    }

    /**
     * S3 answered with an error of its own: it is there, but refused this request (no such bucket,
     * credentials it does not accept, another region, an error of its own with a 5xx).
     */
    static final class Refused extends Unavailable {
        private final String key;
        private final int status;
        private final String code;
        private final String reason;

        private final boolean deleteNotDone;

        Refused(String message, String key, int status, String code, String reason, Throwable cause) {
            this(message, key, status, code, reason, false, cause);
        }

        private Refused(String message, String key, int status, String code, String reason, boolean deleteNotDone, Throwable cause) {
            super(message, cause);
            this.key = key;
            this.status = status;
            this.code = code;
            this.reason = reason;
            this.deleteNotDone = deleteNotDone;
        }

        /**
         * Whether this is S3's answer to a lock's release ({@link #deleteIfOurs}) saying it did not
         * delete: the request refused as such (a 400, 405) or an error for its key. Its HEAD just
         * before saw the claim, and nothing of that request is left to land later, as it may be of
         * one whose answer was lost.
         */
        boolean deleteNotDone() {
            return deleteNotDone;
        }

        /** This refusal, its message led by {@code what}: what it leaves, where the request alone does not say. */
        Refused leading(String what) {
            return new Refused(what + getMessage(), key, status, code, reason, deleteNotDone, this);
        }

        /**
         * S3's HTTP status; {@link #KEY_IN_BATCH} for an error S3 gave this key in a DeleteObjects
         * it answered 200 (the batch's status, which said nothing of the key).
         */
        int status() {
            return status;
        }

        /** S3's error code ({@code AccessDenied}), or null where its answer had none. */
        String code() {
            return code;
        }

        /** The key the refused request named (a copy's: where it copies to). */
        String key() {
            return key;
        }

        /** Whether the request itself was at fault (4xx): asked again, it would be refused again. */
        boolean isClientError() {
            return status >= 400 && status < 500;
        }

        /** S3's answer in a few words, such as {@code HTTP 404 NoSuchBucket}. */
        String reason() {
            return reason;
        }
    }

    /**
     * The status of a {@link Refused} S3 gave one key in a DeleteObjects answered 200: none of its
     * own. It was journaled as that 200, which read as no refusal at all; its code says why.
     */
    static final int KEY_IN_BATCH = 0;

    /** What S3 said of one key in its answer to a DeleteObjects, {@code e}: its code first, as {@code HTTP 403 AccessDenied} says a request's. */
    private static String keyError(S3Error e) {
        return e.code() + " for this key (its delete-batch answered HTTP 200)";
    }

    /** The object a conditional PUT named with If-Match does not exist (HTTP 404). */
    static final class Missing extends IOException {
        Missing(String message) {
            super(message);
        }
    }

    /** An upload read from a file that changed while it went up: aborted, so nobody saw it. */
    static final class SourceChanged extends IOException {
        SourceChanged(String message) {
            super(message);
        }
    }

    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration SOCKET_TIMEOUT = Duration.ofSeconds(60);
    static final int MAX_ATTEMPTS = 6;
    /**
     * How long S3 has to answer a request that sends no body of ours (a listing, a HEAD, a GET's
     * headers: the content a GET streams after them is not counted), each attempt and all of them.
     * Without it an S3 that accepts connections and answers nothing (a hung server, a proxy) made
     * the SDK wait the socket timeout on every attempt: an open of a file not cached yet waited
     * six minutes for its EIO. PUTs and parts get more: see {@link #uploadLimits}.
     */
    private static final Duration DEFAULT_ATTEMPT_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration DEFAULT_ANSWER_TIMEOUT = Duration.ofSeconds(30);
    /**
     * The slowest link an upload is given time for: an attempt to send N bytes has the answer
     * timeout plus N at this rate (a part of 16 MiB 9 min 2 s, a PUT of 64 MiB 34 min 38 s). Four
     * parts go up at once, so a link of 1 Mbit/s still carries an upload in parts.
     */
    private static final long SLOWEST_UPLOAD_BYTES_PER_SECOND = 32 << 10;

    /** S3's largest object, 10,000 parts of at most 5 GiB: {@link S3Storage} lets no file grow past it (EFBIG). */
    static final long MAX_OBJECT_BYTES = 5L << 40;
    /** S3's limits on one upload in parts: how many, and how small each but the last may be. */
    private static final int MAX_PARTS = 10_000;
    static final long MIN_PART_BYTES = 5L << 20;
    /** The largest object one PUT may upload (S3's limit). */
    private static final long MAX_PUT_BYTES = 5L << 30;
    /** The largest object one CopyObject copies: larger ones are copied in parts (UploadPartCopy). */
    private static final long MAX_COPY_BYTES = MAX_PUT_BYTES;
    /** The most one part copied from another object (UploadPartCopy) may hold (S3's limit). */
    private static final long MAX_COPY_PART_BYTES = MAX_PUT_BYTES;
    /**
     * A file larger than this goes up in parts of {@link #DEFAULT_PART_BYTES} (more where 10,000 would
     * not hold it), and an object larger than it comes down in ranges of that size, several at a
     * time, each retried alone: one request streams at one connection's speed and starts over after
     * any failure. Below it, one request costs less. As the AWS CLI and mountpoint-s3 do, in larger
     * parts, since every part is a request.
     */
    static final long DEFAULT_PARTS_ABOVE = 64L << 20;
    static final long DEFAULT_PART_BYTES = 16L << 20;
    /** How many parts go up or come down at once (per bucket; the write-back uploads a few files at once too). */
    private static final int PART_MOVERS = 4;

    /** Requests made, by kind (list, head, get, put, delete): what a mount costs. */
    private final Map<String, java.util.concurrent.atomic.LongAdder> requests = new java.util.concurrent.ConcurrentHashMap<>();
    private final S3Client client;
    /** Threads made as parts move, none before. */
    private final ExecutorService partMovers = daemonThreads(PART_MOVERS, "s3-part");
    private volatile long partsAbove = DEFAULT_PARTS_ABOVE;
    /** {@link #DEFAULT_ATTEMPT_TIMEOUT} and {@link #DEFAULT_ANSWER_TIMEOUT}, given to each request that sends no body. */
    private volatile AwsRequestOverrideConfiguration answerLimits = answeredWithin(DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_ANSWER_TIMEOUT);
    private volatile long slowestUpload = SLOWEST_UPLOAD_BYTES_PER_SECOND;
    private volatile long partBytes = DEFAULT_PART_BYTES;
    /** Objects larger than this are copied in parts: S3's limit on one CopyObject, lower in tests. */
    private volatile long copiedInPartsAbove = MAX_COPY_BYTES;
    private final AwsCredentialsProvider credentials;
    /** Where {@link #credentials} looks, in a few words. */
    private final String credentialsFrom;
    private final String bucket;
    private final String where;
    /**
     * Why the last request got no answer at all (the endpoint unreachable), or null since one was
     * answered. While it is set, every request but {@link #probe} fails at once with it: the SDK's
     * retries take seconds per request (minutes where connecting times out), and a FUSE request
     * waiting through them holds up the program that made it. The store's write-back probes.
     */
    private volatile Away unreachable;

    /** Why no request gets an answer from S3, and since when: one value, so the two are always read together. */
    private record Away(String reason, Instant since) {
    }

    /**
     * The latest time S3 answered an upload (a PUT, a completion, a copy) by its own clock: its Date
     * header, to the second; null before the first, or from a server that sends none.
     */
    private final java.util.concurrent.atomic.AtomicReference<Instant> uploadAnswered = new java.util.concurrent.atomic.AtomicReference<>();

    private final Heard heard;

    private Bucket(S3Client client, AwsCredentialsProvider credentials, String credentialsFrom, String bucket, String where,
                   Heard heard) {
        this.client = client;
        this.heard = heard;
        this.credentials = credentials;
        this.credentialsFrom = credentialsFrom;
        this.bucket = bucket;
        this.where = where;
    }

    /**
     * A client for {@code spec}, configured as the AWS tools would be: endpoint from the spec, else
     * AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else AWS's own; region likewise from the spec,
     * AWS_REGION, the profile, else us-east-1; credentials from the access key variables, else the
     * SDK's default chain (profiles, web identity, container and instance roles).
     */
    static Bucket connect(S3Spec spec, Map<String, String> env) {
        URI endpoint = spec.endpoint();
        if (endpoint == null) {
            String fromEnv = firstNonBlank(env.get("AWS_ENDPOINT_URL_S3"), env.get("AWS_ENDPOINT_URL"));
            endpoint = fromEnv == null ? null : URI.create(fromEnv);
        }
        String region = firstNonBlank(spec.region(), env.get("AWS_REGION"), env.get("AWS_DEFAULT_REGION"));
        if (region == null) {
            try {
                region = new DefaultAwsRegionProviderChain().getRegion().id();
            } catch (SdkClientException e) {
                // MinIO, Ceph and s3proxy ignore the region but the signature needs one
                region = "us-east-1";
            }
        }
        String profile = firstNonBlank(env.get("AWS_PROFILE"));
        AwsCredentialsProvider credentials = credentials(env, profile);
        Heard heard = new Heard();
        S3ClientBuilder b = S3Client.builder()
                .httpClient(UrlConnectionHttpClient.builder()
                        .connectionTimeout(CONNECT_TIMEOUT).socketTimeout(SOCKET_TIMEOUT).build())
                .region(Region.of(region))
                .credentialsProvider(credentials)
                // the SDK's newer default checksums (CRC32 trailers) are refused by many S3 servers
                // other than AWS's; these are the settings that work with all of them
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                // over http:// the SDK sends each body aws-chunked, each chunk signed; s3proxy stored
                // such a PUT and, about one in ten, broke the connection before the client had
                // written all of it ("Error writing request body"), so the SDK retried a PUT that
                // had landed (benchmarks.md, session 48). Signed whole instead: every body here can be
                // read twice (a file, bytes, a file's range). Over https:// the payload goes unsigned
                // (and, with WHEN_REQUIRED checksums, with no trailer), chunked or not.
                .serviceConfiguration(S3Configuration.builder().expectContinueEnabled(false)
                        .chunkedEncodingEnabled(false).build())
                // the JDK keeps idle connections for reuse; when the server has closed several, each
                // attempt may take another dead one, so a few more attempts than the SDK's 3
                .overrideConfiguration(o -> o.retryStrategy(new AnsweredOnce(AwsRetryStrategy.standardRetryStrategy().toBuilder()
                        .maxAttempts(MAX_ATTEMPTS).build())).addExecutionInterceptor(heard));
        if (endpoint != null) {
            b.endpointOverride(endpoint);
            String host = endpoint.getHost() == null ? "" : endpoint.getHost().toLowerCase(Locale.ROOT);
            // virtual-host addressing needs DNS for BUCKET.host: only AWS's own endpoints have it
            b.forcePathStyle(!host.endsWith(".amazonaws.com"));
        }
        String where = endpoint == null ? "AWS S3 (" + region + ")" : endpoint.toString();
        String credentialsFrom = profile != null ? "none in profile '" + profile + "'"
                : "none in the variables, ~/.aws, a web identity, a container or an instance role";
        return new Bucket(b.build(), credentials, credentialsFrom, spec.bucket(), where, heard);
    }

    /**
     * Whether the request this thread makes got any answer, at any attempt (a status line and
     * headers, whatever came after): what tells S3 away (no connection, or no answer) from S3
     * answering in a way the request could not use (a body cut off, unparsable, a 429 whose
     * Retry-After outlasts the limits). The SDK runs a synchronous request's steps on its caller's
     * thread.
     */
    private static final class Heard implements ExecutionInterceptor {
        private final ThreadLocal<boolean[]> heard = ThreadLocal.withInitial(() -> new boolean[1]);

        @Override
        public void beforeExecution(Context.BeforeExecution context, ExecutionAttributes attributes) {
            heard.get()[0] = false;
        }

        /** The request this thread makes while it may go once ({@link #sentOnce}); else null. */
        private final ThreadLocal<Once> once = new ThreadLocal<>();

        /** A request that may go once: its attempts so far, and the status its first got (0: none). */
        private static final class Once {
            int attempts;
            int firstStatus;
        }

        @Override
        public void afterTransmission(Context.AfterTransmission context, ExecutionAttributes attributes) {
            heard.get()[0] = true;
            Once o = once.get();
            if (o != null && o.attempts == 1) {
                o.firstStatus = context.httpResponse().statusCode();
            }
        }

        /**
         * The SDK retries a request whose answer failed or never came on its own, with no way to look
         * between attempts: a second attempt of a request {@link #sentOnce} is stopped before it goes.
         */
        @Override
        public void beforeTransmission(Context.BeforeTransmission context, ExecutionAttributes attributes) {
            Once o = once.get();
            if (o != null && o.attempts++ > 0) {
                throw new NotSentAgain(o.firstStatus);
            }
        }

        /** Runs {@code request}, whose attempts this thread makes, letting it go to S3 once. */
        <T> T sentOnce(java.util.function.Supplier<T> request) {
            once.set(new Once());
            try {
                return request.get();
            } finally {
                once.remove();
            }
        }

        /**
         * What S3 answered the one attempt of a request {@link #sentOnce} that {@code e} stopped from
         * going again, such as {@code HTTP 500}; null where no answer came.
         */
        static String firstAnswer(Throwable e) {
            NotSentAgain stop = e instanceof NotSentAgain n ? n : (NotSentAgain) e.getCause();
            return stop.firstStatus == 0 ? null : "HTTP " + stop.firstStatus;
        }

        /** Whether the last request of this thread got an answer; forgotten once asked. */
        boolean takeHeard() {
            boolean[] h = heard.get();
            boolean was = h[0];
            h[0] = false;
            return was;
        }
    }

    /**
     * Whether this thread's requests take an error S3 answered (a 5xx but throttling) as final, not
     * retried by the client: set by the write-back for an upload S3 refused before, retried on its
     * own backoff, and for the journal's replay ({@link #answeredOnce}).
     */
    private static final ThreadLocal<Boolean> ANSWER_FINAL = ThreadLocal.withInitial(() -> false);

    /**
     * Runs {@code upload} with an error S3 answers it with (a 500 for one key) taken at its first
     * attempt, not after the client's retries: about 1.5 s each (6 attempts), which a retry on the
     * write-back's own backoff makes again at every try. s3proxy answers 500 for a name its file
     * system cannot store: after a restart with 20 of them journaled, the replay's tries in a row
     * held every new file and lock release for 30-37 s. A failure to reach S3 (a connection the
     * server closed, no answer) and throttling (429, 503) are still retried as usual.
     */
    static <T> T answeredOnce(IOSupplier<T> upload) throws IOException {
        boolean was = ANSWER_FINAL.get();
        ANSWER_FINAL.set(true);
        try {
            return upload.get();
        } finally {
            ANSWER_FINAL.set(was);
        }
    }

    /** What {@link #answeredOnce} runs. */
    interface IOSupplier<T> {
        T get() throws IOException;
    }

    /**
     * The SDK's retry strategy but for a request made {@link #answeredOnce}: no retry after an error
     * S3 answered. The SDK makes a synchronous request's attempts on its caller's thread.
     */
    private static final class AnsweredOnce implements software.amazon.awssdk.retries.api.RetryStrategy {
        private final software.amazon.awssdk.retries.api.RetryStrategy usual;

        AnsweredOnce(software.amazon.awssdk.retries.api.RetryStrategy usual) {
            this.usual = usual;
        }

        @Override
        public software.amazon.awssdk.retries.api.AcquireInitialTokenResponse acquireInitialToken(
                software.amazon.awssdk.retries.api.AcquireInitialTokenRequest request) {
            return usual.acquireInitialToken(request);
        }

        @Override
        public software.amazon.awssdk.retries.api.RefreshRetryTokenResponse refreshRetryToken(
                software.amazon.awssdk.retries.api.RefreshRetryTokenRequest request) {
            if (ANSWER_FINAL.get() && request.failure() instanceof S3Exception s3 && s3.statusCode() != 429
                    && s3.statusCode() != 503) {
                throw new software.amazon.awssdk.retries.api.TokenAcquisitionFailedException(
                        "S3 answered; retried on the write-back's own backoff", request.failure());
            }
            return usual.refreshRetryToken(request);
        }

        @Override
        public software.amazon.awssdk.retries.api.RecordSuccessResponse recordSuccess(
                software.amazon.awssdk.retries.api.RecordSuccessRequest request) {
            return usual.recordSuccess(request);
        }

        @Override
        public int maxAttempts() {
            return usual.maxAttempts();
        }

        @Override
        public boolean useClientDefaults() {
            return usual.useClientDefaults();
        }

        @Override
        public software.amazon.awssdk.retries.api.RetryStrategy.Builder<?, ?> toBuilder() {
            return usual.toBuilder();
        }

        @Override
        public void close() {
            usual.close();
        }
    }

    /** What stops the SDK's second attempt at a request that may go once ({@link Heard#sentOnce}): its first failed. */
    private static final class NotSentAgain extends RuntimeException {
        /** The HTTP status S3 answered the first attempt with; 0 where none came. */
        final int firstStatus;

        NotSentAgain(int firstStatus) {
            super("not sent again: its first attempt failed", null, false, false);
            this.firstStatus = firstStatus;
        }
    }

    /** The variables' keys, else the profile named (null: none), else the SDK's default chain. */
    private static AwsCredentialsProvider credentials(Map<String, String> env, String profile) {
        String id = env.get("AWS_ACCESS_KEY_ID");
        String secret = env.get("AWS_SECRET_ACCESS_KEY");
        if (id != null && !id.isBlank() && secret != null && !secret.isBlank()) {
            String token = env.get("AWS_SESSION_TOKEN");
            return StaticCredentialsProvider.create(token == null || token.isBlank()
                    ? AwsBasicCredentials.create(id, secret)
                    : AwsSessionCredentials.create(id, secret, token));
        }
        if (profile != null) {
            return ProfileCredentialsProvider.create(profile);
        }
        return DefaultCredentialsProvider.builder().build();
    }

    /** A pool of daemon threads named {@code name}, made as tasks come, none before. */
    static ExecutorService daemonThreads(int count, String name) {
        return Executors.newFixedThreadPool(count, r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
    }

    private static String firstNonBlank(String... values) {
        for (String v : values) {
            if (v != null && !v.isBlank()) {
                return v;
            }
        }
        return null;
    }

    private void count(String op) {
        requests.computeIfAbsent(op, k -> new java.util.concurrent.atomic.LongAdder()).increment();
    }

    /** Content bytes that came down from S3 and went up to it, what a host's S3 traffic is mostly made of. */
    private final java.util.concurrent.atomic.LongAdder bytesDown = new java.util.concurrent.atomic.LongAdder();
    private final java.util.concurrent.atomic.LongAdder bytesUp = new java.util.concurrent.atomic.LongAdder();

    /** Content bytes moved so far: {@code [down, up]} (a copy S3 makes moves none here). */
    long[] bytesMoved() {
        return new long[] {bytesDown.sum(), bytesUp.sum()};
    }

    /**
     * Requests made so far, by kind; and {@value #PUT_ANSWER_LOST}: conditional PUTs whose first attempt
     * landed with its answer lost, each of which cost a HEAD to tell from a conflict.
     */
    Map<String, Long> requests() {
        Map<String, Long> out = new java.util.TreeMap<>();
        requests.forEach((k, v) -> out.put(k, v.sum()));
        return out;
    }

    String where() {
        return where;
    }

    /**
     * Throws, in one line, when no credentials can be found for S3. The SDK says so only as a
     * client error of each request, which reads as S3 being unreachable; a daemon started by sudo,
     * which drops the AWS variables, would mount a tree every operation of which fails.
     */
    void requireCredentials() throws IOException {
        try {
            credentials.resolveCredentials();
        } catch (SdkException e) {
            // the SDK's own message lists every provider of its chain, a paragraph on one line
            throw new IOException("no AWS credentials for " + where + " (" + credentialsFrom + "): set AWS_ACCESS_KEY_ID"
                    + " and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, in the mount's environment", e);
        }
    }

    /** One level below {@code prefix} (which ends with '/', or is empty for the bucket's top). */
    Level list(String prefix, boolean oneLevel) throws IOException {
        return askedAgain("list", prefix, () -> listOnce(prefix, oneLevel));
    }

    private Level listOnce(String prefix, boolean oneLevel) throws IOException {
        List<Listed> objects = new ArrayList<>();
        List<String> prefixes = new ArrayList<>();
        String token = null;
        java.util.Set<String> tokens = new java.util.HashSet<>();
        Instant answered = null;
        refuseWhileUnreachable("list", prefix);
        try {
            do {
                // keys come URL-encoded (and the SDK decodes them): in plain XML a key holding a control
                // character, which any S3 client may have put, cannot be said, and the whole listing
                // failed to parse (the directory unreadable, the store taken for away)
                ListObjectsV2Request.Builder req = ListObjectsV2Request.builder().bucket(bucket).prefix(prefix)
                        .continuationToken(token).encodingType(EncodingType.URL);
                if (oneLevel) {
                    req.delimiter("/");
                }
                count("list");
                ListObjectsV2Response r = client.listObjectsV2(req.overrideConfiguration(answerLimits).build());
                answered = r.sdkHttpResponse().firstMatchingHeader("Date").map(Bucket::httpDate).orElse(null);
                for (S3Object o : r.contents()) {
                    if (shows(prefix, o.key())) {
                        objects.add(new Listed(o.key(), o.size() == null ? 0 : o.size(), o.lastModified(), o.eTag()));
                    }
                }
                for (CommonPrefix p : r.commonPrefixes()) {
                    if (shows(prefix, p.prefix())) {
                        prefixes.add(p.prefix());
                    }
                }
                token = Boolean.TRUE.equals(r.isTruncated()) ? r.nextContinuationToken() : null;
                if (Boolean.TRUE.equals(r.isTruncated()) && (token == null || token.isEmpty())) {
                    // more to come, and no way to ask for it: taken as the end, 101 names of 2,100 went unseen
                    throw new Unusable(line("list", prefix, "a page says more follows but gives no continuation token"), null);
                }
                if (token != null && !tokens.add(token)) {
                    // as botocore: a server that hands out a token twice would be asked for ever
                    LOG.warn("S3 list s3://{}/{}: the same continuation token came twice, at page {}; the listing"
                            + " fails", bucket, prefix, tokens.size() + 1);
                    throw new Unavailable(line("list", prefix, "S3 at " + where + " gave the same continuation token"
                            + " twice: the listing would never end"), null);
                }
            } while (token != null);
        } catch (SdkException e) {
            throw failure("list", prefix, e);
        }
        answered();
        return new Level(objects, prefixes, answered);
    }

    /** An HTTP date (RFC 1123, what S3's Date header says), or null where it is not one. */
    private static Instant httpDate(String value) {
        try {
            return java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME.parse(value, Instant::from);
        } catch (java.time.DateTimeException e) {
            return null;
        }
    }

    /** The locks' leases are no store's files: only a listing of them shows them. */
    private static boolean shows(String prefix, String key) {
        return !key.startsWith(HostLocks.KEYS) || prefix.startsWith(HostLocks.KEYS);
    }

    /** Whether any object has a key starting with {@code prefix} (a directory, marker or not). */
    boolean anyUnder(String prefix) throws IOException {
        refuseWhileUnreachable("list", prefix);
        return firstUnder(prefix);
    }

    /**
     * Asks S3 even while it is known to be unreachable (one listing of at most one key below
     * {@code prefix}): returns once it answers, which lets every other request through again, or
     * throws while it is still away.
     */
    void probe(String prefix) throws IOException {
        firstUnder(prefix);
    }

    private boolean firstUnder(String prefix) throws IOException {
        count("list");
        boolean any;
        try {
            any = !client.listObjectsV2(b -> b.bucket(bucket).prefix(prefix).maxKeys(1).encodingType(EncodingType.URL)
                    .overrideConfiguration(answerLimits)).contents().isEmpty();
        } catch (SdkException e) {
            throw failure("list", prefix, e);
        }
        answered();
        return any;
    }

    /** Whether S3 is known to be unreachable: the last request got no answer, and none has been answered since. */
    boolean unreachable() {
        return unreachable != null;
    }

    /**
     * The key of a file above {@code key} (the part of {@code key} before one of its '/'), where a server
     * over a file system (s3proxy, MinIO's fs mode) holds that file, and so nothing below it: it answers
     * 500, at every attempt, to a PUT, HEAD or GET of a key under the file, where S3 keeps the two apart
     * (the file {@code c1} and {@code c1/other}). Asked only after such a 5xx: a HEAD of each key above,
     * from the top, until one is an object, then a listing of one key below it, which such a server shows
     * empty (S3, holding both, shows what is there). Null where none is so, or where these are not
     * answered: the 5xx is then S3's own, as before. One HEAD per level and a listing, after the retries
     * of the request that failed.
     */
    String fileAbove(String key) {
        for (int i = key.indexOf('/'); i > 0; i = key.indexOf('/', i + 1)) {
            String above = key.substring(0, i);
            try {
                count("head");
                client.headObject(b -> b.bucket(bucket).key(above).overrideConfiguration(answerLimits));
            } catch (S3Exception e) {
                if (e.statusCode() == 404) {
                    continue;
                }
                return null;
            } catch (SdkException e) {
                return null;
            }
            try {
                return firstUnder(above + "/") ? null : above;
            } catch (IOException e) {
                return null;
            }
        }
        return null;
    }

    /**
     * Whether {@code e}, S3's answer for {@code key}, is a server over a file system saying that a file
     * holds a name above it ({@link #fileAbove}): no such object, as the namespace now is. Said at debug
     * level: the store takes it as gone and lists the directory again.
     */
    private boolean underAFile(String op, String key, S3Exception e) {
        if (e.statusCode() < 500) {
            return false;
        }
        String file = fileAbove(key);
        if (file == null) {
            return false;
        }
        answered();
        LOG.debug("S3 {} s3://{}/{}: HTTP {} under s3://{}/{}, a file on a server over a file system: taken as no such object",
                op, bucket, key, e.statusCode(), bucket, file);
        return true;
    }

    /** HEAD of one object; null when there is none. */
    Head head(String key) throws IOException {
        return askedAgain("head", key, () -> headOnce(key));
    }

    private Head headOnce(String key) throws IOException {
        refuseWhileUnreachable("head", key);
        count("head");
        try {
            HeadObjectResponse r = client.headObject(b -> b.bucket(bucket).key(key).overrideConfiguration(answerLimits));
            answered();
            return new Head(r.contentLength() == null ? 0 : r.contentLength(), r.lastModified(), r.eTag(), r.metadata());
        } catch (S3Exception e) {
            if (e.statusCode() == 404 || underAFile("head", key, e)) {
                answered();
                return null;
            }
            throw failure("head", key, e);
        } catch (SdkException e) {
            throw failure("head", key, e);
        }
    }

    /** Downloads one object into {@code to} (replaced); null when there is no such object. */
    Head get(String key, Path to) throws IOException {
        return askedAgain("get", key, () -> getOnce(key, to));
    }

    private Head getOnce(String key, Path to) throws IOException {
        Path tmp = to.resolveSibling(to.getFileName() + ".part");
        refuseWhileUnreachable("get", key);
        count("get");
        try (ResponseInputStream<GetObjectResponse> in = client.getObject(b -> b.bucket(bucket).key(key).overrideConfiguration(answerLimits))) {
            answered();
            GetObjectResponse r = in.response();
            long length = r.contentLength() == null ? -1 : r.contentLength();
            // a value that is no SHA-256 (another tool's, a test's) names nothing to check
            String named = r.metadata().get(S3Storage.META_SHA);
            String sha = ContentHash.isEtag(named) ? named.toLowerCase(Locale.ROOT) : null;
            java.security.MessageDigest digest = sha == null ? null : ContentHash.digest();
            try (CacheFile out = CacheFile.replace(tmp)) {
                // a full cache disk says ENOSPC, not a bare IOException
                long wrote = out.writeAll(new Body(in, key, length, digest));
                bytesDown.add(wrote);
                requireWhole(key, "", wrote, length);
            }
            if (digest != null && !sha.equals(ContentHash.hex(digest))) {
                throw new Unusable(line("get", key, "the body is not the SHA-256 its metadata names"), null);
            }
            Files.move(tmp, to, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return new Head(Math.max(length, 0), r.lastModified(), r.eTag(), r.metadata());
        } catch (S3Exception e) {
            if (e.statusCode() == 404 || underAFile("get", key, e)) {
                answered();
                return null;
            }
            throw failure("get", key, e);
        } catch (SdkException e) {
            throw failure("get", key, e);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /**
     * S3 answered, but the answer cannot be used: a GET's body that broke off, or ended before its
     * Content-Length (the JDK's HTTP client reads a connection closed early as the end of the
     * body), or is not the SHA-256 the object's metadata names; an answer cut off or unparsable; a
     * 429 whose Retry-After outlasted the limits. A failed request, asked again where that is safe
     * ({@link #askedAgain}), never taken for S3 away, and never a short file kept.
     */
    static final class Unusable extends Unavailable {
        Unusable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** A GET's body: its read failures are {@link Unusable} (not the cache's write failures), its bytes hashed into {@code digest} (if any). */
    private final class Body extends java.io.FilterInputStream {
        private final String key;
        private final long length;
        private final java.security.MessageDigest digest;
        private long got;

        Body(java.io.InputStream in, String key, long length, java.security.MessageDigest digest) {
            super(in);
            this.key = key;
            this.length = length;
            this.digest = digest;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) == -1 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n;
            try {
                n = in.read(b, off, len);
            } catch (java.net.SocketTimeoutException e) {
                // a body that stalled for the socket's timeout: asked again, it would stall as long again
                throw new Unavailable(line("get", key, "no byte of the body for " + SOCKET_TIMEOUT.toSeconds() + " s after "
                        + got + " of " + length + " bytes"), e);
            } catch (IOException | SdkException e) {
                throw new Unusable(line("get", key, "the body broke off after " + got + " of " + length + " bytes: "
                        + firstLine(e)), e);
            }
            if (n > 0) {
                got += n;
                if (digest != null) {
                    digest.update(b, off, n);
                }
            }
            return n;
        }
    }

    /** A body of {@code wrote} bytes where the answer said {@code length} (-1: it did not say): {@link Unusable} unless they agree. */
    private void requireWhole(String key, String range, long wrote, long length) throws Unusable {
        if (length >= 0 && wrote != length) {
            throw new Unusable(line("get", key, range + "the body ended after " + wrote + " of its " + length + " bytes"), null);
        }
    }

    /** Attempts, counting the first, at a request whose answer could not be used: as many as the SDK makes at one that fails. */
    private static final int UNUSABLE_ATTEMPTS = MAX_ATTEMPTS;
    /** The wait before the second attempt at such a request, doubled at each (the SDK's backoff begins so). */
    private static final Duration UNUSABLE_BACKOFF = Duration.ofMillis(100);
    /** {@link #UNUSABLE_BACKOFF}, but for tests, whose servers cut every answer: 3.1 s a request there. */
    private volatile Duration unusableBackoff = UNUSABLE_BACKOFF;

    /** Asks again a request whose answer could not be used after {@code first}, doubled at each (tests). */
    void askAgainAfter(Duration first) {
        unusableBackoff = first;
    }

    @FunctionalInterface
    private interface Ask<T> {
        T run() throws IOException;
    }

    /**
     * {@code ask}, a request that may be made twice (a GET, HEAD, listing or delete), asked again
     * while its answer cannot be used ({@link Unusable}: the SDK does not retry a body cut off after
     * its headers), at most {@link #UNUSABLE_ATTEMPTS} times in all; then the last {@link Unusable}
     * (EIO) for this request only: S3 answered, so it is not taken for away.
     */
    private <T> T askedAgain(String op, String key, Ask<T> ask) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                return ask.run();
            } catch (Unusable e) {
                if (attempt == UNUSABLE_ATTEMPTS) {
                    throw new Unusable(e.getMessage().replace(" (Input/output error)", "") + " (" + attempt
                            + " attempts) (Input/output error)", e.getCause());
                }
                LOG.debug("{} (attempt {} of {})", e.getMessage(), attempt, UNUSABLE_ATTEMPTS);
            }
            try {
                Thread.sleep(unusableBackoff.toMillis() << (attempt - 1));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException(line(op, key, "interrupted"));
            }
        }
    }

    /** The first line of a throwable's message (the SDK's run to paragraphs), or its class where it has none. */
    private static String firstLine(Throwable e) {
        return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage().lines().findFirst().orElse("");
    }

    /**
     * As {@link #get(String, Path)}, for an object thought to be {@code expectedSize} bytes: one larger
     * than {@link #DEFAULT_PARTS_ABOVE} comes down in ranges (see {@link #download}). One replaced
     * meanwhile comes whole with one GET after all.
     */
    Head get(String key, Path to, long expectedSize) throws IOException {
        if (expectedSize <= partsAbove) {
            return get(key, to);
        }
        Path tmp = to.resolveSibling(to.getFileName() + ".ranges");
        try {
            Download d = download(key, tmp, expectedSize);
            if (d == null) {
                return null;
            }
            Head whole = d.finish();
            Files.move(tmp, to, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return whole;
        } catch (ChangedWhileRead e) {
            return get(key, to);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** Whether an object of {@code size} bytes comes down in ranges (and a file of that size goes up in parts). */
    boolean inParts(long size) {
        return size > partsAbove;
    }

    /**
     * Asked with a key and the bytes of a range of it the cache disk had no room for (ENOSPC): true
     * when room was made ({@link S3Storage#makeRoom}), and the range is asked again, at most
     * {@link S3Storage#ROOM_TRIES} times. Set by the store.
     */
    volatile java.util.function.BiPredicate<String, Long> roomFor = (key, bytes) -> false;

    /**
     * Starts the download of the object at {@code key} into {@code file} (replaced) in ranges of the
     * part size, several at a time, each asked of the version the first range came from (If-Match its
     * ETag), and returns once that first range is in, which tells the object's size, ETag and
     * metadata; null when there is no such object. The rest can be read as it arrives
     * ({@link Download#await}).
     */
    Download download(String key, Path file, long expectedSize) throws IOException {
        CacheFile out = CacheFile.replace(file);
        try {
            long part = partSize(expectedSize);
            Range first = getRange(key, null, 0, part, out);
            if (first == null) {
                out.close();
                return null;
            }
            return new Download(key, file, out, first, part);
        } catch (IOException | RuntimeException e) {
            out.close();
            throw e;
        }
    }

    /**
     * An object coming down in ranges into a file of the cache, readable as they arrive. Its file is
     * the caller's to keep or remove once the download ended ({@link #whenEnded}).
     */
    final class Download {
        private final String key;
        private final Path file;
        private final Head head;
        private final long part;
        private final CacheFile out;
        /** Each range's end, by index: in the file, failed, or given up after another failed. */
        private final CompletableFuture<Void>[] done;
        private final CompletableFuture<Void> ended;
        /** The ranges a task or a read has begun to fetch, by index; guarded by this. */
        private final java.util.BitSet taken = new java.util.BitSet();
        /** The ranges in the file, by index; guarded by this. */
        private final java.util.BitSet arrived = new java.util.BitSet();
        /** Why the download failed; guarded by this. */
        private IOException failure;

        private Download(String key, Path file, CacheFile out, Range first, long part) {
            this.key = key;
            this.file = file;
            this.out = out;
            this.head = first.head();
            this.part = part;
            int ranges = (int) Math.max(1, (head.size() + part - 1) / part);
            this.done = new CompletableFuture[ranges];
            // the first range is in; a server that ignored the Range sent them all
            int in = first.whole() ? ranges : 1;
            for (int i = 0; i < ranges; i++) {
                done[i] = i < in ? CompletableFuture.completedFuture(null) : new CompletableFuture<>();
            }
            taken.set(0, in);
            arrived.set(0, in);
            // a few tasks, each the next range no one has taken (in order: a reader from the start
            // finds its bytes first) and then back at the end of the pool's queue, so the downloads
            // of several files take turns; a read further on takes the ranges it needs (see await)
            for (int t = Math.min(PART_MOVERS, ranges - in); t > 0 && submitNext(); t--) {
                // each task hands on to the next
            }
            // each range is done once whoever took it stopped writing: only then is the file closed (a
            // range still writing into a descriptor closed, and its number reused, would write elsewhere)
            this.ended = CompletableFuture.allOf(done).whenComplete((v, e) -> {
                out.close();
                checkWhole();
            });
        }

        /**
         * Once every range is in: the file against the SHA-256 the object's metadata names, where it
         * names one. Each range is checked for its length only, and a byte changed on the way (a
         * tester's proxy flipped one in a 70 MiB file) was kept, served, and uploaded again with a hash
         * of the damage at the next change. A mismatch fails the download: the file is not kept.
         */
        private void checkWhole() {
            synchronized (this) {
                if (failure != null) {
                    return;
                }
            }
            String named = head.meta().get(S3Storage.META_SHA);
            if (!ContentHash.isEtag(named)) {
                return;
            }
            try {
                if (!named.equalsIgnoreCase(ContentHash.of(file))) {
                    failed(new Unusable(line("get", key, "the ranges put together are not the SHA-256 its metadata names"),
                            null));
                }
            } catch (IOException | RuntimeException e) {
                failed(e);
            }
        }

        /** Hands the pool a task that fetches the next free range, then hands on; false when the pool refused (closing). */
        private boolean submitNext() {
            try {
                partMovers.execute(() -> {
                    int index = takeNext();
                    if (index >= 0) {
                        fetch(index);
                        submitNext();
                    }
                });
                return true;
            } catch (java.util.concurrent.RejectedExecutionException closing) {
                failed(new IOException("S3 get s3://" + bucket + "/" + key + ": the store is closing"));
                for (int j = 0; j < done.length; j++) {
                    if (take(j)) {
                        done[j].complete(null);
                    }
                }
                return false;
            }
        }

        /** The first range no one has taken, now the caller's; -1 when none is left. */
        private synchronized int takeNext() {
            int index = taken.nextClearBit(0);
            if (index >= done.length) {
                return -1;
            }
            taken.set(index);
            return index;
        }

        /** Whether range {@code index} was free: the caller fetches it. */
        private synchronized boolean take(int index) {
            if (taken.get(index)) {
                return false;
            }
            taken.set(index);
            return true;
        }

        /** Fetches range {@code index} (taken by the caller) into the file, unless the download failed already. */
        private void fetch(int index) {
            try {
                synchronized (this) {
                    if (failure != null) {
                        return; // after a failure none of the rest is wanted
                    }
                }
                long start = index * part;
                long length = Math.min(part, head.size() - start);
                // a full cache disk: content already on S3 leaves it, and the range is asked again
                for (int tries = 1; ; tries++) {
                    try {
                        getRange(key, head.etag(), start, length, out);
                        break;
                    } catch (IOException e) {
                        if (Errors.errno(e) != Linux.ENOSPC || !roomFor.test(key, length) || tries >= S3Storage.ROOM_TRIES) {
                            throw e;
                        }
                    }
                }
                arrived(index);
            } catch (IOException | RuntimeException e) {
                failed(e);
            } finally {
                done[index].complete(null);
            }
        }

        private synchronized void arrived(int index) {
            arrived.set(index);
            notifyAll();
        }

        private synchronized void failed(Throwable e) {
            if (failure == null) {
                failure = cause(e);
            }
            notifyAll();
        }

        private IOException cause(Throwable e) {
            Throwable c = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
            return c instanceof IOException io ? io
                    : new IOException("S3 get s3://" + bucket + "/" + key + ": " + c, c);
        }

        /** The object's size, ETag and metadata, as its first range said. */
        Head head() {
            return head;
        }

        Path file() {
            return file;
        }

        /** Whether every range is in, or the download failed. */
        boolean ended() {
            return ended.isDone();
        }

        /**
         * Waits until the file holds the object's bytes from {@code position} for {@code length} (or to
         * its end), fetching here the ranges of them no task has begun: a read near the end (a zip's
         * directory, a Parquet footer) waits for its own range, not for all those before it.
         */
        void await(long position, long length) throws IOException {
            long end = Math.min(head.size(), position + length);
            if (end <= position) {
                return;
            }
            int first = (int) (position / part);
            int last = (int) ((end - 1) / part);
            for (int i = first; i <= last; i++) {
                if (take(i)) {
                    fetch(i);
                }
            }
            awaitArrived(first, last);
        }

        private synchronized void awaitArrived(int first, int last) throws IOException {
            while (arrived.nextClearBit(first) <= last) {
                if (failure != null) {
                    throw failure instanceof ChangedWhileRead
                            ? ErrnoException.of(Linux.ESTALE, key, "replaced on S3 while it was downloaded")
                            : failure;
                }
                try {
                    wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException("S3 get s3://" + bucket + "/" + key + ": interrupted");
                }
            }
        }

        /** Waits for every range; the first failure is thrown. */
        Head finish() throws IOException {
            try {
                ended.join();
            } catch (java.util.concurrent.CompletionException | java.util.concurrent.CancellationException e) {
                failed(e);
            }
            synchronized (this) {
                if (failure != null) {
                    throw failure;
                }
            }
            return head;
        }

        /** Runs {@code then} once every range is in, or the download failed (with why; else null). */
        void whenEnded(java.util.function.Consumer<IOException> then) {
            ended.whenComplete((v, e) -> {
                IOException why;
                synchronized (this) {
                    why = failure;
                }
                then.accept(why);
            });
        }
    }

    /** A range of an object written into its place: {@code head} says the whole object's size; {@code whole}: the server sent it all. */
    private record Range(Head head, boolean whole) {
    }

    /** The object changed, or shrank, between the ranges of one download. */
    private static final class ChangedWhileRead extends IOException {
        ChangedWhileRead(String message) {
            super(message);
        }
    }

    /**
     * Bytes {@code from} to {@code from + length} of version {@code ifMatch} of {@code key}, written at
     * the same place in {@code out} (or the whole object from its start, where the server sends it
     * all); an IOException where the object is no longer that version. Returns what a HEAD would have
     * said of it: the answer carries its size, ETag and metadata.
     */
    Head getPart(String key, String ifMatch, long from, long length, CacheFile out) throws IOException {
        return getRange(key, ifMatch, from, length, out).head();
    }

    /**
     * Bytes {@code from} to {@code from + length} of the object (of version {@code ifMatch}, or any: the
     * first range), written at the same place in {@code out}; null when there is no such object.
     */
    private Range getRange(String key, String ifMatch, long from, long length, CacheFile out) throws IOException {
        return askedAgain("get", key, () -> getRangeOnce(key, ifMatch, from, length, out::writeAll));
    }

    /**
     * Bytes {@code from} to {@code from + length} of version {@code ifMatch} (any where null) of
     * {@code key} into the start of {@code into}, in memory: a file larger than the cache disk is read
     * so ({@link RangeReads}). Returns what a HEAD would say (the object's size). ESTALE where the
     * object is no longer that version, or gone; EIO where the server sent more than the range (it
     * ignored the Range header: the whole object would not fit).
     */
    Head getInto(String key, String ifMatch, long from, int length, byte[] into) throws IOException {
        RangeSink sink = (in, at) -> {
            int off = (int) (at - from);
            if (at < from || off > into.length) {
                throw new IOException(line("get", key, "the server sent bytes from " + at + " for a range from " + from));
            }
            int got = off;
            for (int n; got < length && (n = in.read(into, got, length - got)) > 0; ) {
                got += n;
            }
            if (got == length && in.read() != -1) {
                throw new IOException(line("get", key, "the server sent more than the " + length + " bytes from " + from
                        + " it was asked"));
            }
            return got - off;
        };
        Range r;
        try {
            r = askedAgain("get", key, () -> getRangeOnce(key, ifMatch, from, length, sink));
        } catch (ChangedWhileRead e) {
            throw ErrnoException.of(Linux.ESTALE, key, "replaced on S3 since it was opened");
        }
        if (r == null) {
            throw ErrnoException.of(Linux.ESTALE, key, "gone from S3 since it was opened");
        }
        return r.head();
    }

    /** Where a range's body goes: written from {@code at} on; returns how many bytes that was. */
    @FunctionalInterface
    private interface RangeSink {
        long writeAll(java.io.InputStream in, long at) throws IOException;
    }

    /** A pool of its own for reading ahead ({@link RangeReads}), so that no upload's or download's parts wait behind it. */
    private final ExecutorService readsAhead = daemonThreads(READ_AHEAD_THREADS, "s3-read-ahead");
    private static final int READ_AHEAD_THREADS = 4;

    /** Runs {@code task} on the read-ahead pool; false when the pool refused it (the store closing). */
    boolean readAhead(Runnable task) {
        try {
            readsAhead.execute(task);
            return true;
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            return false;
        }
    }

    private Range getRangeOnce(String key, String ifMatch, long from, long length, RangeSink out) throws IOException {
        refuseWhileUnreachable("get", key);
        count("get");
        String range = "bytes=" + from + "-" + (from + length - 1);
        try (ResponseInputStream<GetObjectResponse> in = client.getObject(b -> b.bucket(bucket).key(key).range(range)
                .ifMatch(ifMatch).overrideConfiguration(answerLimits))) {
            GetObjectResponse r = in.response();
            // "bytes 0-99/1234"; none where the server sent the whole object
            String contentRange = r.contentRange();
            long total = contentRange != null ? Long.parseLong(contentRange.substring(contentRange.lastIndexOf('/') + 1).trim())
                    : r.contentLength() == null ? 0 : r.contentLength();
            long at = contentRange == null ? 0 : from;
            answered();
            long wrote = out.writeAll(new Body(in, key, r.contentLength() == null ? -1 : r.contentLength(), null), at);
            bytesDown.add(wrote);
            requireWhole(key, range + ": ", wrote, r.contentLength() == null ? -1 : r.contentLength());
            if (contentRange != null && wrote != Math.min(length, total - from)) {
                throw new ChangedWhileRead("s3://" + bucket + "/" + key + ": " + range + " came " + wrote + " bytes");
            }
            return new Range(new Head(total, r.lastModified(), r.eTag(), r.metadata()), contentRange == null);
        } catch (S3Exception e) {
            answered();
            if (ifMatch == null && (e.statusCode() == 404 || underAFile("get", key, e))) {
                return null;
            }
            if (e.statusCode() == 412 || e.statusCode() == 416 || e.statusCode() == 404) {
                // replaced (or removed, or now shorter than the range) since the first range
                throw new ChangedWhileRead("s3://" + bucket + "/" + key + ": changed while downloaded");
            }
            throw failure("get", key, e);
        } catch (SdkException e) {
            throw failure("get", key, e);
        }
    }

    /**
     * Uploads {@code from} as {@code key}, only if the object's ETag is still {@code ifMatch}, or, with
     * {@code ifMatch} null, only if there is no object yet (If-None-Match: *). Returns the new ETag.
     *
     * @throws PreconditionFailed the object changed (or appeared) since
     * @throws Missing the object {@code ifMatch} named is gone
     */
    String put(String key, Path from, Map<String, String> meta, String ifMatch) throws IOException {
        return put(key, from, meta, ifMatch, null);
    }

    /**
     * As {@link #put(String, Path, Map, String)} from a file that may change meanwhile: in parts
     * whatever its size (nobody sees an upload in parts before its completion), each part followed
     * by {@code unchanged}, and the upload aborted with {@link SourceChanged} once it says false. Null:
     * {@code from} does not change (a snapshot).
     */
    String put(String key, Path from, Map<String, String> meta, String ifMatch, BooleanSupplier unchanged)
            throws IOException {
        return put(key, from, meta, ifMatch, unchanged, 0);
    }

    /**
     * As {@link #put(String, Path, Map, String, BooleanSupplier)} for a file whose first {@code kept}
     * bytes are those of the object's version {@code ifMatch} (a file only appended to since): where
     * they are at least one part, S3 copies them into the new object (UploadPartCopy, conditional on
     * that version) and only the rest goes up, so a log kept open costs its new lines, not its size.
     */
    String put(String key, Path from, Map<String, String> meta, String ifMatch, BooleanSupplier unchanged, long kept)
            throws IOException {
        long size = Files.size(from);
        if (ifMatch != null && kept >= MIN_PART_BYTES && kept < size) {
            return landed(key, size, meta, ifMatch, () -> putAppended(key, from, size, kept, meta, ifMatch, unchanged));
        }
        if (size > partsAbove || unchanged != null) {
            return landed(key, size, meta, ifMatch, () -> putInParts(key, from, size, meta, ifMatch, unchanged));
        }
        // from the file, not a stream: the SDK retries a failed attempt by reading the body again
        return landed(key, size, meta, ifMatch, () -> putOnce(key, RequestBody.fromFile(from), meta, ifMatch));
    }

    /** As {@link #put(String, Path, Map, String)} for a small body held in memory. */
    String put(String key, byte[] body, Map<String, String> meta, String ifMatch) throws IOException {
        return landed(key, body.length, meta, ifMatch, () -> putOnce(key, RequestBody.fromBytes(body), meta, ifMatch));
    }

    /** An upload of {@code size} bytes: a PUT, or the completion of one in parts. */
    @FunctionalInterface
    private interface Upload {
        String run() throws IOException;
    }

    private String landed(String key, long size, Map<String, String> meta, String ifMatch, Upload upload) throws IOException {
        try {
            return upload.run();
        } catch (RetriedPrecondition e) {
            // The SDK retried a conditional PUT (or completion) whose first attempt landed but whose
            // answer was lost (a connection cut after the server took it): the retry then fails its
            // own condition against our own object, or finds its upload gone. It is ours when size
            // and metadata are what we sent (the store's metadata carries the content's SHA-256).
            // An answer without an ETag (s3proxy's file backend sends none for a directory's marker)
            // cannot tell the versions apart; size and metadata (the SHA-256) still say it is ours
            Head now = head(key);
            if (now != null && now.size() == size && now.meta().equals(meta)
                    && (now.etag() == null || !now.etag().equals(ifMatch))) {
                landedUnanswered(size);
                return now.etag();
            }
            count(PUT_ANSWER_LOST);
            throw new PreconditionFailed(e.getMessage());
        }
    }

    private static AwsRequestOverrideConfiguration answeredWithin(Duration attempt, Duration all) {
        return AwsRequestOverrideConfiguration.builder().apiCallAttemptTimeout(attempt).apiCallTimeout(all).build();
    }

    /**
     * Requests that send no body wait {@code attempt} for each answer, {@code all} in all; uploads
     * {@code all} and their bytes at {@code slowestUpload} per second (tests: a second or two).
     */
    void answerTimeouts(Duration attempt, Duration all, long slowestUpload) {
        answerLimits = answeredWithin(attempt, all);
        this.slowestUpload = slowestUpload;
    }

    /**
     * The limits of a request that sends {@code bytes}: its answer time plus the bytes at
     * {@link #SLOWEST_UPLOAD_BYTES_PER_SECOND} an attempt, and one more answer time for retries
     * that fail fast (a dead pooled connection). Without them an upload to an S3 that takes
     * connections and reads nothing never ended: the socket timeout covers reads, not a write
     * blocked on a full send buffer, so the write-back, and an fsync or umount waiting on it, hung.
     */
    private AwsRequestOverrideConfiguration uploadLimits(long bytes) {
        Duration answer = answerLimits.apiCallTimeout().orElseThrow();
        Duration attempt = answer.plusMillis(bytes * 1000 / slowestUpload);
        return answeredWithin(attempt, attempt.plus(answer));
    }

    /**
     * Files larger than {@code above} go up in parts, and objects larger than it come down in ranges,
     * of {@code partBytes}, at least S3's 5 MiB (tests: small files in parts).
     */
    void movedInParts(long above, long partBytes) {
        movedInParts(above, partBytes, MAX_COPY_BYTES);
    }

    /** As {@link #movedInParts(long, long)}, and objects larger than {@code copiedAbove} are copied in parts (tests). */
    void movedInParts(long above, long partBytes, long copiedAbove) {
        if (above > MAX_PUT_BYTES || copiedAbove > MAX_COPY_BYTES || partBytes < MIN_PART_BYTES || partBytes > MAX_PUT_BYTES) {
            throw new IllegalArgumentException("parts of " + partBytes + " bytes above " + above + " (copies above "
                    + copiedAbove + "): a part holds 5 MiB to 5 GiB, and one PUT or copy at most 5 GiB");
        }
        this.partsAbove = above;
        this.partBytes = partBytes;
        this.copiedInPartsAbove = copiedAbove;
    }

    /** The size of each part (the last holds the rest) of an upload of {@code size} bytes. */
    private long partSize(long size) {
        long fit = (size + MAX_PARTS - 1) / MAX_PARTS;
        long mib = 1L << 20;
        return Math.max(partBytes, (fit + mib - 1) / mib * mib);
    }

    /**
     * Uploads {@code from} in parts, side by side, under the condition of a PUT, which S3 checks as
     * the upload is completed: until then nobody sees the object. An upload that fails is aborted, so
     * its parts are not kept (and billed); one cut short by a crash is left to the bucket's
     * lifecycle rule (AbortIncompleteMultipartUpload), as with every S3 tool.
     */
    private String putInParts(String key, Path from, long size, Map<String, String> meta, String ifMatch,
                              BooleanSupplier unchanged) throws IOException {
        refuseWhileUnreachable("put", key);
        return inParts("put", key, size, meta, ifMatch, (uploadId, number, offset, length) -> {
            CompletedPart sent = uploadPart(key, uploadId, number, from, offset, length, unchanged);
            // what the part read may be torn by a change since: no later part is worth sending
            requireUnchanged(unchanged, key);
            return sent;
        }, () -> requireUnchanged(unchanged, key));
    }

    /**
     * {@link #put(String, Path, Map, String, BooleanSupplier, long)}'s upload in parts: the object's
     * first {@code kept} bytes copied by S3 (in as few parts as a copy allows), the rest of
     * {@code from} sent.
     */
    private String putAppended(String key, Path from, long size, long kept, Map<String, String> meta, String ifMatch,
                               BooleanSupplier unchanged) throws IOException {
        refuseWhileUnreachable("put", key);
        long copies = (kept + MAX_COPY_PART_BYTES - 1) / MAX_COPY_PART_BYTES;
        List<Span> spans = evenSpans(0, kept, (kept + copies - 1) / copies);
        spans.addAll(evenSpans(kept, size, partSize(size)));
        return inParts("put", key, spans, meta, ifMatch, (uploadId, number, offset, length) -> {
            if (offset < kept) {
                return copyPart(key, ifMatch, key, uploadId, number, offset, length);
            }
            CompletedPart sent = uploadPart(key, uploadId, number, from, offset, length, unchanged);
            requireUnchanged(unchanged, key);
            return sent;
        }, () -> requireUnchanged(unchanged, key));
    }

    /** A part of an upload in parts: {@code length} bytes of the object from {@code offset}. */
    private record Span(long offset, long length) {
    }

    /** The bytes from {@code from} to {@code to} in parts of {@code partBytes} (the last holds the rest). */
    private static List<Span> evenSpans(long from, long to, long partBytes) {
        List<Span> spans = new ArrayList<>();
        for (long at = from; at < to; at += partBytes) {
            spans.add(new Span(at, Math.min(partBytes, to - at)));
        }
        return spans;
    }

    /** Makes part {@code number} of upload {@code uploadId}: {@code length} bytes at {@code offset}. */
    @FunctionalInterface
    private interface PartMaker {
        CompletedPart make(String uploadId, int number, long offset, long length) throws IOException;
    }

    /** A check that may refuse, with an IOException, to complete an upload whose parts are all made. */
    @FunctionalInterface
    private interface CompletionCheck {
        CompletionCheck NONE = () -> {
        };

        void check() throws IOException;
    }

    /**
     * An upload in parts of {@code key}, whose object gets the metadata {@code meta}: each part made by
     * {@code maker}, side by side in the pool, then {@code check}, then completed under a PUT's
     * condition ({@code ifMatch}, or If-None-Match * when null), which S3 checks then. An upload that
     * fails is aborted, so S3 keeps (and bills) none of its parts.
     */
    private String inParts(String op, String key, long size, Map<String, String> meta, String ifMatch, PartMaker maker,
                           CompletionCheck check) throws IOException {
        return inParts(op, key, evenSpans(0, size, partSize(size)), meta, ifMatch, maker, check);
    }

    /** As above, in the parts {@code spans}, in order. */
    private String inParts(String op, String key, List<Span> spans, Map<String, String> meta, String ifMatch,
                           PartMaker maker, CompletionCheck check) throws IOException {
        String uploadId = createUpload(key, meta);
        boolean done = false;
        try {
            List<java.util.concurrent.Callable<CompletedPart>> parts = new ArrayList<>();
            for (Span span : spans) {
                int number = parts.size() + 1;
                parts.add(() -> maker.make(uploadId, number, span.offset(), span.length()));
            }
            // a part made after the abort would stay: allOf ends them all first
            List<CompletedPart> made = allOf(parts, op, key);
            check.check();
            String etag = complete(key, uploadId, made, ifMatch);
            done = true;
            return etag;
        } finally {
            if (!done) {
                abort(key, uploadId);
            }
        }
    }

    /** Begins an upload in parts of {@code key}, whose object will have the metadata {@code meta}; its id. */
    private String createUpload(String key, Map<String, String> meta) throws IOException {
        count("create-upload");
        try {
            String uploadId = client.createMultipartUpload(b -> b.bucket(bucket).key(key).metadata(meta)
                    .overrideConfiguration(answerLimits)).uploadId();
            answered();
            return uploadId;
        } catch (SdkException e) {
            throw failure("create-upload", key, e);
        }
    }

    private static void requireUnchanged(BooleanSupplier unchanged, String key) throws SourceChanged {
        if (unchanged != null && !unchanged.getAsBoolean()) {
            throw new SourceChanged(key + ": the file changed while it went up");
        }
    }

    /**
     * Runs every task of {@code work} side by side in the part movers' pool and returns what each
     * returned, in order; the first failure is thrown. After a failure none of the rest is wanted:
     * those not begun never begin, and those under way are waited out, so nothing of them happens
     * after this returns. (Cancelling a running FutureTask does not do that: its get() answers at
     * once while the task goes on, and parts of an aborted upload landed after the abort, kept and
     * billed by S3 with no upload listed to abort.)
     */
    private <T> List<T> allOf(List<java.util.concurrent.Callable<T>> work, String op, String key) throws IOException {
        java.util.concurrent.atomic.AtomicBoolean abandoned = new java.util.concurrent.atomic.AtomicBoolean();
        List<Future<T>> tasks = new ArrayList<>(work.size());
        boolean all = false;
        try {
            for (java.util.concurrent.Callable<T> w : work) {
                tasks.add(partMovers.submit(() -> {
                    if (abandoned.get()) {
                        throw new java.util.concurrent.CancellationException("another part failed");
                    }
                    return w.call();
                }));
            }
            List<T> results = new ArrayList<>(tasks.size());
            for (Future<T> f : tasks) {
                results.add(f.get());
            }
            all = true;
            return results;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("S3 " + op + " s3://" + bucket + "/" + key + ": interrupted");
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        } finally {
            if (!all) {
                abandoned.set(true);
                waitOut(tasks);
            }
        }
    }

    /** Waits until each of {@code tasks} has ended, however it ends, an interrupt meanwhile kept for after. */
    private static void waitOut(List<? extends Future<?>> tasks) {
        boolean interrupted = Thread.interrupted();
        for (Future<?> f : tasks) {
            while (true) {
                try {
                    f.get();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException | java.util.concurrent.CancellationException e) {
                    break; // the first failure is what is thrown
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private CompletedPart uploadPart(String key, String uploadId, int number, Path from, long offset, long length,
                                     BooleanSupplier unchanged) throws IOException {
        refuseWhileUnreachable("put-part", key);
        count("put-part");
        try (CacheFile file = CacheFile.openForReading(from)) {
            // a stream of the part at each attempt: the SDK retries a failed part by reading it again
            UploadPartResponse r = client.uploadPart(b -> b.bucket(bucket).key(key).uploadId(uploadId)
                            .partNumber(number).contentLength(length).overrideConfiguration(uploadLimits(length)),
                    RequestBody.fromContentProvider(() -> file.range(offset, length), length, "application/octet-stream"));
            answered();
            bytesUp.add(length);
            return CompletedPart.builder().partNumber(number).eTag(r.eTag()).build();
        } catch (SdkException e) {
            // a file cut short under the part (a truncate) ends its body early: that is no sign of S3 away
            requireUnchanged(unchanged, key);
            throw failure("put-part", key, e);
        } catch (UncheckedIOException e) {
            throw new IOException("S3 put-part s3://" + bucket + "/" + key + ": " + e.getCause().getMessage(), e);
        }
    }

    private String complete(String key, String uploadId, List<CompletedPart> parts, String ifMatch) throws IOException {
        count("complete-upload");
        try {
            CompleteMultipartUploadResponse r = client.completeMultipartUpload(b -> {
                b.bucket(bucket).key(key).uploadId(uploadId).multipartUpload(u -> u.parts(parts));
                if (ifMatch == null) {
                    b.ifNoneMatch("*");
                } else {
                    b.ifMatch(ifMatch);
                }
                // S3 joins the parts before it answers: an upload's time for the answer, none for bytes.
                // Unbounded, a server that never answered held the write-back for the socket
                // timeout times the attempts (six minutes)
                b.overrideConfiguration(uploadLimits(0));
            });
            answered();
            uploadAnswered(r);
            return r.eTag();
        } catch (S3Exception e) {
            answered();
            String code = e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
            Integer attempts = e.numAttempts();
            if (e.statusCode() == 404 && "NoSuchUpload".equals(code) && attempts != null && attempts > 1) {
                // an attempt before completed it, its answer lost: S3 forgets a completed upload's id
                throw new RetriedPrecondition("s3://" + bucket + "/" + key + ": upload completed by an attempt whose answer was lost");
            }
            throw refusedPut(key, ifMatch, e);
        } catch (SdkException e) {
            throw failure("complete-upload", key, e);
        }
    }

    /** How many tasks of parts and ranges wait for a thread of the pool (tests: whose turn comes when). */
    int partsWaiting() {
        return ((java.util.concurrent.ThreadPoolExecutor) partMovers).getQueue().size();
    }

    /** How many uploads in parts of keys under {@code prefix} S3 holds begun and neither completed nor aborted. */
    int uploadsUnderway(String prefix) throws IOException {
        count("list-uploads");
        try {
            return client.listMultipartUploads(b -> b.bucket(bucket).prefix(prefix).encodingType(EncodingType.URL)
                    .overrideConfiguration(answerLimits)).uploads().size();
        } catch (SdkException e) {
            throw failure("list-uploads", prefix, e);
        }
    }

    /**
     * Aborts the uploads in parts of keys under {@code prefix} begun more than {@code age} before
     * S3 listed them, by S3's own clock (the listing's Date against each upload's Initiated): a host
     * whose clock runs ahead cannot take another host's upload under way for one left behind.
     * Returns how many; none where S3 sends no Date to judge by.
     */
    int abortUploadsOlderThan(String prefix, Duration age) throws IOException {
        refuseWhileUnreachable("list-uploads", prefix);
        count("list-uploads");
        List<MultipartUpload> old = new ArrayList<>();
        try {
            for (var page : client.listMultipartUploadsPaginator(b -> b.bucket(bucket).prefix(prefix)
                    .encodingType(EncodingType.URL).overrideConfiguration(answerLimits))) {
                Instant listed = page.sdkHttpResponse().firstMatchingHeader("Date").map(Bucket::httpDate).orElse(null);
                for (MultipartUpload u : page.uploads()) {
                    if (listed != null && u.initiated() != null && u.initiated().isBefore(listed.minus(age))) {
                        old.add(u);
                    }
                }
            }
            answered();
        } catch (SdkException e) {
            throw failure("list-uploads", prefix, e);
        }
        for (MultipartUpload u : old) {
            abort(u.key(), u.uploadId());
        }
        return old.size();
    }

    /** Begins an upload in parts and leaves it (tests: what a host that stopped mid-upload left). */
    String beginUpload(String key) throws IOException {
        try {
            return client.createMultipartUpload(b -> b.bucket(bucket).key(key).overrideConfiguration(answerLimits)).uploadId();
        } catch (SdkException e) {
            throw failure("create-upload", key, e);
        }
    }

    /**
     * What becomes of the parts of an upload whose abort failed: the docs' two cleanups, the store's
     * own (the log said only the lifecycle rule, which most buckets have none of) and the bucket's.
     */
    static final String PARTS_STAY = "its parts stay until the store's daily cleanup (before an upload in parts, as rclone"
            + " cleanup does) aborts it a day old, or the bucket's lifecycle rule AbortIncompleteMultipartUpload removes them";

    /** Gives up an upload in parts, so S3 keeps none of them; a failure to is logged, not thrown. */
    private void abort(String key, String uploadId) {
        if (unreachable != null) {
            // the client's retries would hold the write-back for seconds, to no avail
            LOG.warn("S3 abort-upload s3://{}/{}: S3 is unreachable; {}", bucket, key, PARTS_STAY);
            return;
        }
        count("abort-upload");
        try {
            client.abortMultipartUpload(b -> b.bucket(bucket).key(key).uploadId(uploadId).overrideConfiguration(answerLimits));
        } catch (SdkException e) {
            if (uploadGone(e)) {
                LOG.info("S3 abort-upload s3://{}/{}: S3 no longer has the upload (another host aborted it, or a"
                        + " lifecycle rule removed it): no part of it stays", bucket, key);
                return;
            }
            LOG.warn("S3 abort-upload s3://{}/{}: {}; {}", bucket, key,
                    e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage().lines().findFirst().orElse(""), PARTS_STAY);
        }
    }

    /**
     * Whether {@code e} says S3 no longer has the upload in parts it was about (404 NoSuchUpload):
     * aborted meanwhile by another host that took it for one left behind, or by a lifecycle rule.
     */
    static boolean uploadGone(Throwable e) {
        // by S3's answer, which a refusal carries as its cause, not by the words of its message
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof S3Exception s3 && s3.statusCode() == 404 && s3.awsErrorDetails() != null
                    && "NoSuchUpload".equals(s3.awsErrorDetails().errorCode())) {
                return true;
            }
        }
        return false;
    }

    /** The count, among {@link #requests}, of retried PUTs that met their own first attempt (or a conflict). */
    static final String PUT_ANSWER_LOST = "put-answer-lost";

    /** A 412 after the SDK had made more than one attempt: maybe our own first attempt's doing. */
    private static final class RetriedPrecondition extends IOException {
        RetriedPrecondition(String message) {
            super(message);
        }
    }

    /**
     * An upload of {@code size} bytes whose answer was lost landed all the same (its object is ours,
     * as a HEAD showed): counted with {@value #PUT_ANSWER_LOST}, and its bytes as gone up.
     */
    void landedUnanswered(long size) {
        count(PUT_ANSWER_LOST);
        bytesUp.add(size);
    }

    private String putOnce(String key, RequestBody body, Map<String, String> meta, String ifMatch) throws IOException {
        refuseWhileUnreachable("put", key);
        PutObjectRequest.Builder req = PutObjectRequest.builder().bucket(bucket).key(key).metadata(meta);
        if (ifMatch == null) {
            req.ifNoneMatch("*");
        } else {
            req.ifMatch(ifMatch);
        }
        count("put");
        try {
            PutObjectResponse r = client.putObject(req.overrideConfiguration(uploadLimits(body.optionalContentLength().orElse(0L)))
                    .build(), body);
            answered();
            uploadAnswered(r);
            bytesUp.add(body.optionalContentLength().orElse(0L));
            return r.eTag();
        } catch (S3Exception e) {
            answered();
            throw refusedPut(key, ifMatch, e);
        } catch (SdkException e) {
            boolean answeredAtAll = heard.takeHeard(); // before the HEAD below, whose answer would count
            IOException refused = refusedUnread(key, ifMatch);
            throw refused != null ? refused : failure("put", key, e, answeredAtAll);
        } catch (UncheckedIOException e) {
            throw new IOException("S3 put s3://" + bucket + "/" + key + ": " + e.getCause().getMessage(), e);
        }
    }

    /**
     * A conditional PUT cut off while its body was still going: s3proxy (and servers like it) answers
     * 412 as soon as it finds the condition failed and closes the connection without reading the
     * body, so a client still sending one larger than the sockets' buffers (a few MiB) sees a write
     * error, not the answer, at every attempt. Not S3 away, but a conflict: a HEAD tells. The
     * refusal where the object now contradicts the condition; null where it does not, or the HEAD
     * cannot say (then it is a failure to reach S3).
     */
    private IOException refusedUnread(String key, String ifMatch) {
        Head now;
        try {
            now = head(key);
        } catch (IOException e) {
            return null;
        }
        if (ifMatch == null) {
            return now != null ? changedSince(key) : null;
        }
        if (now == null) {
            return removedSince(key);
        }
        return ifMatch.equals(now.etag()) ? null : changedSince(key);
    }

    /**
     * Copies the object {@code from}, while its ETag is still {@code fromEtag}, to {@code to} under a
     * PUT's conditions there (If-Match {@code ifMatch}, or If-None-Match * when null), with the
     * metadata {@code meta} (all of it), or the source's where null; the copy's ETag. S3 copies the
     * content itself: nothing comes down or goes up; past {@link #MAX_COPY_BYTES}, in parts. A 412 is
     * {@link PreconditionFailed} whichever condition failed (S3 does not say which), a 404
     * {@link Missing} (the source gone, or the object {@code ifMatch} named).
     */
    String copy(String from, String fromEtag, long size, String to, String ifMatch, Map<String, String> meta)
            throws IOException {
        refuseWhileUnreachable("copy", to);
        // S3 itself honours the destination's conditions; some servers that speak its API (s3proxy
        // among them) ignore them on a copy, so the destination is asked first: another host's object
        // put there between the two requests is what such a server would let this copy replace
        Head there = head(to);
        if (ifMatch != null && there == null) {
            throw removedSince(to);
        }
        if (ifMatch == null ? there != null : !ifMatch.equals(there.etag())) {
            throw changedSince(to);
        }
        if (size > copiedInPartsAbove) {
            return copyInParts(from, fromEtag, size, to, ifMatch, meta);
        }
        CopyObjectRequest.Builder req = CopyObjectRequest.builder().sourceBucket(bucket).sourceKey(from)
                .copySourceIfMatch(fromEtag).destinationBucket(bucket).destinationKey(to);
        if (meta == null) {
            req.metadataDirective(MetadataDirective.COPY);
        } else {
            req.metadataDirective(MetadataDirective.REPLACE).metadata(meta);
        }
        if (ifMatch == null) {
            req.ifNoneMatch("*");
        } else {
            req.ifMatch(ifMatch);
        }
        return sendCopy(req, size, from, to, ifMatch);
    }

    /**
     * Gives the object {@code key}, while its ETag is still {@code etag}, the metadata {@code meta}
     * (all of it: S3 keeps none of the old), by copying it onto itself; its new ETag. A change of
     * attributes alone, without the content coming down or going up. Fails as {@link #copy} does.
     */
    String replaceMetadata(String key, String etag, long size, Map<String, String> meta) throws IOException {
        refuseWhileUnreachable("copy", key);
        if (size > copiedInPartsAbove) {
            return copyInParts(key, etag, size, key, etag, meta);
        }
        // the source's condition is the destination's: a server that ignores If-Match on a copy still
        // checks this one (s3proxy does)
        return sendCopy(CopyObjectRequest.builder().sourceBucket(bucket).sourceKey(key).copySourceIfMatch(etag)
                .destinationBucket(bucket).destinationKey(key).ifMatch(etag)
                .metadataDirective(MetadataDirective.REPLACE).metadata(meta), size, key, key, etag);
    }

    private String sendCopy(CopyObjectRequest.Builder req, long size, String from, String to, String ifMatch) throws IOException {
        count("copy");
        try {
            // S3 answers once the copy is made: as long as an upload of the bytes would take, at most
            CopyObjectResponse r = client.copyObject(req.overrideConfiguration(uploadLimits(size)).build());
            answered();
            uploadAnswered(r);
            return r.copyObjectResult().eTag();
        } catch (S3Exception e) {
            answered();
            if (e.statusCode() == 404) {
                throw removedSince(from + (from.equals(to) ? "" : " or " + to));
            }
            IOException refused = refusedPut(to, ifMatch, e);
            throw refused instanceof RetriedPrecondition ? new PreconditionFailed(refused.getMessage()) : refused;
        } catch (SdkException e) {
            throw failure("copy", to, e);
        }
    }

    /**
     * {@link #copy} of an object larger than one CopyObject takes: an upload in parts, each part
     * copied by S3 from a range of the source (UploadPartCopy, conditional on its ETag), completed
     * under the destination's conditions, as {@link #putInParts} is; aborted if anything fails. The
     * new object keeps the source's metadata where {@code meta} is null (an upload in parts takes
     * its metadata when it begins, so the source's is read first).
     */
    private String copyInParts(String from, String fromEtag, long size, String to, String ifMatch, Map<String, String> meta)
            throws IOException {
        Map<String, String> kept = meta;
        if (kept == null) {
            Head source = head(from);
            if (source == null) {
                throw removedSince(from);
            }
            if (!fromEtag.equals(source.etag())) {
                throw changedSince(from);
            }
            kept = source.meta();
        }
        return inParts("copy", to, size, kept, ifMatch,
                (uploadId, number, offset, length) -> copyPart(from, fromEtag, to, uploadId, number, offset, length),
                CompletionCheck.NONE);
    }

    private CompletedPart copyPart(String from, String fromEtag, String to, String uploadId, int number, long offset,
                                   long length) throws IOException {
        refuseWhileUnreachable("copy-part", to);
        count("copy-part");
        try {
            // S3 answers once the part is copied: as long as an upload of its bytes would take, at most
            UploadPartCopyResponse r = client.uploadPartCopy(b -> b.sourceBucket(bucket).sourceKey(from)
                    .copySourceIfMatch(fromEtag).copySourceRange("bytes=" + offset + "-" + (offset + length - 1))
                    .destinationBucket(bucket).destinationKey(to).uploadId(uploadId).partNumber(number)
                    .overrideConfiguration(uploadLimits(length)));
            answered();
            return CompletedPart.builder().partNumber(number).eTag(r.copyPartResult().eTag()).build();
        } catch (S3Exception e) {
            answered();
            if (e.statusCode() == 404 && !"NoSuchUpload".equals(e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode())) {
                throw removedSince(from);
            }
            if (e.statusCode() == 412 || e.statusCode() == 416) {
                // 416: the range is past the end of the version named, so it is not the one this host saw
                throw changedSince(from);
            }
            throw failure("copy-part", to, e);
        } catch (SdkException e) {
            throw failure("copy-part", to, e);
        }
    }

    /** The object {@code key} (or what the text names) is not the version this host saw: 412's failure. */
    private PreconditionFailed changedSince(String key) {
        return new PreconditionFailed(changedText(key));
    }

    private String changedText(String key) {
        return "s3://" + bucket + "/" + key + " changed on S3 since this host last saw it";
    }

    /** The object {@code key} (or what the text names) is gone though this host saw it: a conditional request's 404. */
    private Missing removedSince(String key) {
        return new Missing("s3://" + bucket + "/" + key + " was removed from S3 since this host last saw it");
    }

    /** Why S3 refused a conditional PUT or completion: the condition, the object gone, or its own error. */
    private IOException refusedPut(String key, String ifMatch, S3Exception e) {
        if (e.statusCode() == 412) {
            Integer attempts = e.numAttempts();
            return attempts != null && attempts > 1 ? new RetriedPrecondition(changedText(key)) : changedSince(key);
        }
        if (e.statusCode() == 404 && ifMatch != null) {
            return removedSince(key);
        }
        return failure("put", key, e);
    }

    /** The most keys one DeleteObjects request removes. */
    static final int MAX_DELETE_BATCH = 1000;

    /**
     * Why deletes go one by one, as DELETEs ({@link #hasNoBatchDelete}), DeleteObjects tried again
     * every {@link #BATCHES_TRIED_AGAIN_AFTER}; null while they go as DeleteObjects.
     */
    private volatile String oneByOne;

    /**
     * How long after the switch to one-by-one deletes (or its last try) a DeleteObjects is tried
     * again: the switch lasted the mount's life, and a server that recovered (a gateway's refusals
     * for a minute) cost a request per object, and lock releases sent as DELETEs, until a remount.
     */
    static final Duration BATCHES_TRIED_AGAIN_AFTER = Duration.ofMinutes(10);

    /** When deletes turned one by one, or DeleteObjects was last tried again since ({@link #nanos}); under the lock. */
    private long oneByOneSince;

    /**
     * How many refusals of DeleteObjects in a row, one answer and none succeeding between, over at
     * least {@link #REFUSING_BEFORE_ONE_BY_ONE}, make it taken for a request the server does not
     * have. One such answer did so until session 68: a gateway's passing 400 switched a mount to
     * DELETEs for good, and with them lock releases the JDK may send twice (tester's coord5 N1: two
     * holders again).
     */
    static final int REFUSALS_BEFORE_ONE_BY_ONE = 3;

    /**
     * How long the refusals of {@link #REFUSALS_BEFORE_ONE_BY_ONE} must go on before the switch. A
     * count alone was reached by one release's own retries (the write-back's 0.5 s, then 1 s): a
     * burst of 405s under two seconds switched a mount for good, and the lost answer to a later
     * DELETE, sent again by the JDK, deleted another host's claim (tester's coord6 finding 1). A
     * server with no DeleteObjects keeps refusing, so it still switches, a minute late; meanwhile
     * its releases stay held on S3, which keeps other hosts out and loses nothing.
     */
    static final Duration REFUSING_BEFORE_ONE_BY_ONE = Duration.ofMinutes(1);

    /**
     * The refusals of DeleteObjects in a row ({@link #REFUSALS_BEFORE_ONE_BY_ONE}), the answer they
     * are and when the first came ({@link #nanos}); under the lock.
     */
    private int batchRefusals;
    private String batchRefusal;
    private long batchRefusedSince;
    private final Object batchRefusalsLock = new Object();

    /** The clock {@link #REFUSING_BEFORE_ONE_BY_ONE} is measured on: a monotonic one, tests' own. */
    private volatile java.util.function.LongSupplier nanos = System::nanoTime;

    /** Measures how long DeleteObjects has been refused on {@code clock}, in nanoseconds (tests). */
    void nanos(java.util.function.LongSupplier clock) {
        nanos = clock;
    }

    /**
     * Removes the objects {@code keys} (at most {@link #MAX_DELETE_BATCH}) with one request; those
     * already gone are fine. What S3 did not remove, each key named with its reason in S3's answer,
     * is returned: the keys to delete one by one (all of them where the server does not take
     * batches), and those it refused.
     */
    NotDeleted deleteAll(List<String> keys) throws IOException {
        return deleteAll(keys, Map.of());
    }

    /**
     * As {@link #deleteAll(List)}, each key in {@code ifMatch} only while its object is still that
     * version (the ETag element of a DeleteObjects: AWS and Ceph take it; a server that ignores it
     * deletes whatever is there). One that is not is left, in {@link NotDeleted#changed}.
     */
    NotDeleted deleteAll(List<String> keys, Map<String, String> ifMatch) throws IOException {
        return keys.isEmpty() ? new NotDeleted(keys, Map.of())
                : askedAgain(batchOp(keys), keys.get(0), () -> deleteAllOnce(keys, ifMatch));
    }

    /**
     * The keys of a DeleteObjects S3 did not remove: {@code again}, to delete one by one, where its
     * error for the key may pass (InternalError, SlowDown) or it took no batch; {@code refused}, its
     * refusal of each other (AccessDenied: how AWS refuses the deletes a bucket policy denies),
     * which a DELETE of the key would only hear again: asked so too, each cost two requests at
     * every retry.
     */
    record NotDeleted(List<String> again, Map<String, Refused> refused, java.util.Set<String> changed) {
        NotDeleted(List<String> again, Map<String, Refused> refused) {
            this(again, refused, java.util.Set.of());
        }
    }

    /** A DeleteObjects' errors for a key that may pass, asked again as a DELETE of its own. */
    private static final java.util.Set<String> PASSING_KEY_ERRORS = java.util.Set.of("InternalError", "SlowDown");
    /** A DeleteObjects' error for a key whose ETag condition failed: another version is there now. */
    private static final String PRECONDITION_FAILED = "PreconditionFailed";

    /**
     * What a DeleteObjects of {@code keys} is said as in its errors, before its first key: the batch,
     * its keys counted. It read as the delete of its first key alone, which the log and stats named.
     */
    private static String batchOp(List<String> keys) {
        return keys.size() == 1 ? "delete-batch" : "delete-batch of " + keys.size() + " keys, the first";
    }

    private NotDeleted deleteAllOnce(List<String> keys, Map<String, String> ifMatch) throws IOException {
        if (keys.isEmpty() || oneByOneNow()) {
            return new NotDeleted(keys, Map.of());
        }
        String op = batchOp(keys);
        refuseWhileUnreachable(op, keys.get(0));
        count("delete-batch");
        boolean conditional = takesConditionalDeletes && keys.stream().anyMatch(ifMatch::containsKey);
        List<ObjectIdentifier> ids = keys.stream().map(k -> ObjectIdentifier.builder().key(k)
                .eTag(conditional ? ifMatch.get(k) : null).build()).toList();
        try {
            DeleteObjectsResponse r = client.deleteObjects(b -> b.bucket(bucket).delete(d -> d.objects(ids).quiet(true))
                    .overrideConfiguration(answerLimits));
            answered();
            batchDeleteTaken();
            List<String> left = new ArrayList<>();
            Map<String, Refused> refused = new java.util.LinkedHashMap<>();
            java.util.Set<String> changed = new java.util.HashSet<>();
            for (S3Error e : r.errors()) {
                if (PRECONDITION_FAILED.equals(e.code()) && conditional && ifMatch.containsKey(e.key())) {
                    changed.add(e.key());
                } else if (PASSING_KEY_ERRORS.contains(e.code())) {
                    LOG.debug("S3 delete s3://{}/{} in a batch: {} {}", bucket, e.key(), e.code(), e.message());
                    left.add(e.key());
                } else if (!"NoSuchKey".equals(e.code())) {
                    String reason = keyError(e);
                    refused.put(e.key(), new Refused(line("delete", e.key(), reason), e.key(), KEY_IN_BATCH, e.code(), reason, null));
                }
            }
            return new NotDeleted(left, refused, changed);
        } catch (S3Exception e) {
            answered();
            if (refusedAsRequest(e) && conditional && takesConditionalDeletes) {
                // s3proxy: 501 NotImplemented for the ETag element. The batch at once without them; one
                // key alone goes back to the caller, for the DELETE it would have had
                takesConditionalDeletes = false;
                LOG.info("S3 server of s3://{} takes no conditional deletes ({}): what another host writes between this"
                        + " host's check of an object and its delete is lost (docs/s3-store.md)", bucket, answerOf(e));
                return keys.size() == 1 ? new NotDeleted(keys, Map.of()) : deleteAllOnce(keys, Map.of());
            }
            if (refusedAsRequest(e)) {
                // ordinary objects, which the caller deletes one by one: no lock's release is among them
                hasNoBatchDelete(e);
                return new NotDeleted(keys, Map.of());
            }
            throw failure(op, keys.get(0), e);
        } catch (SdkException e) {
            throw failure(op, keys.get(0), e);
        }
    }

    /**
     * Whether a DeleteObjects may carry the ETag each key's delete is conditional on: until the
     * server refuses one so ({@link #deleteAll(List, Map)}), for the life of this bucket.
     */
    boolean takesConditionalDeletes() {
        return takesConditionalDeletes;
    }

    private volatile boolean takesConditionalDeletes = true;

    /** Removes one object; one that is already gone is fine. */
    void delete(String key) throws IOException {
        askedAgain("delete", key, () -> {
            deleteOnce(key);
            return null;
        });
    }

    private void deleteOnce(String key) throws IOException {
        refuseWhileUnreachable("delete", key);
        count("delete");
        try {
            client.deleteObject(b -> b.bucket(bucket).key(key).overrideConfiguration(answerLimits));
        } catch (S3Exception e) {
            if (e.statusCode() != 404) {
                throw failure("delete", key, e);
            }
        } catch (SdkException e) {
            throw failure("delete", key, e);
        }
        answered();
    }

    /**
     * Removes the object {@code key} while a HEAD just before finds it {@code ours}: the release of
     * a name claimed here (a lock), which may be sent again only after looking. A DELETE whose answer
     * was lost after S3 did it (a connection cut, a 500), sent again as the SDK does, deleted the
     * claim another host made meanwhile: two holders. So each DELETE goes once, a HEAD before each.
     * Null where S3 has no such object now; else the HEAD of the object left there, not ours.
     */
    Head deleteIfOurs(String key, java.util.function.Predicate<Head> ours) throws IOException {
        for (int attempt = 1; ; attempt++) {
            Head now = head(key);
            if (now == null) {
                return null;
            }
            if (!ours.test(now)) {
                return now;
            }
            try {
                deleteSentOnce(key);
                return null;
            } catch (Unusable e) {
                if (attempt == UNUSABLE_ATTEMPTS) {
                    throw e;
                }
                LOG.debug("{} (attempt {} of {})", e.getMessage(), attempt, UNUSABLE_ATTEMPTS);
            }
            try {
                Thread.sleep(unusableBackoff.toMillis() << (attempt - 1));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException(line("delete", key, "interrupted"));
            }
        }
    }

    /**
     * One delete of {@code key}, not sent again: {@link Unusable} where its one attempt failed as the
     * SDK would have retried (its answer lost, a 500, no connection), S3 not taken for away on it
     * (the HEAD before the next attempt says so, with the SDK's retries).
     *
     * <p>It goes as a DeleteObjects of that one key, a POST with a body, not as a DELETE: the JDK's
     * HttpURLConnection, under the SDK's UrlConnectionHttpClient, sends a request again once on its
     * own when the connection fails before the answer came (sun.net.www.http.HttpClient.parseHTTP),
     * below the SDK, which sees one attempt. It does so for every method, POST too (unless
     * sun.net.http.retryPost is false), but not for a request that streams its body, which the SDK
     * makes of every request with a Content-Length (setFixedLengthStreamingMode). A DELETE has no
     * body: the DELETE so sent again deleted the lock another host had taken meanwhile (two holders).
     * A server without DeleteObjects ({@link #hasNoBatchDelete}) gets the DELETE, which keeps that
     * risk.
     */
    private void deleteSentOnce(String key) throws IOException {
        refuseWhileUnreachable("delete", key);
        if (oneByOneNow()) {
            deleteSentOnceAlone(key);
            return;
        }
        count("delete-batch");
        DeleteObjectsResponse r;
        try {
            r = heard.sentOnce(() -> client.deleteObjects(b -> b.bucket(bucket)
                    .delete(d -> d.objects(ObjectIdentifier.builder().key(key).build()).quiet(false))
                    .overrideConfiguration(answerLimits)));
        } catch (S3Exception e) {
            if (refusedAsRequest(e)) {
                answered();
                if (hasNoBatchDelete(e)) {
                    deleteSentOnceAlone(key);
                    return;
                }
                // not sent as a DELETE now: that would be the release the JDK may send twice, for an
                // answer a gateway may give once; the write-back sends it again, as a DeleteObjects,
                // after its wait for a key S3 refused
                String reason = "S3 answered " + answerOf(e) + " to a DeleteObjects";
                throw new Refused(line("delete", key, reason + "; sent again as one, not as a DELETE, unless the"
                        + " server keeps refusing it"), key, e.statusCode(), errorCode(e), reason, true, e);
            }
            if (refusedWhole(e)) {
                // a 403 AccessDenied, a 404 NoSuchBucket: S3 refused the request before any of it was
                // done, as a 405 is; taken for a failure, the release's tomb was not marked refused and
                // a re-take here failed EIO while the refusal lasted (dev-batchdel2's left item)
                answered();
                String reason = answerOf(e);
                throw new Refused(line("delete", key, "S3 answered " + reason), key, e.statusCode(), errorCode(e), reason, true, e);
            }
            throw failure("delete", key, e);
        } catch (RuntimeException e) {
            throw notSentAgain(key, e);
        }
        answered();
        batchDeleteTaken();
        for (S3Error e : r.errors()) {
            if (key.equals(e.key())) {
                // S3 answers each key of a DeleteObjects apart; its own failure there, as a 500, may
                // have left the object or not: looked at again before it is asked again. So is a
                // NoSuchKey, which S3 never gives (it lists a key it did not have as deleted): a
                // server that gave one of a key it kept, taken at its word, held the lock for ever,
                // sync saying synced (tester's coord5 N2); where the key is gone the HEAD says so
                String reason = "S3 answered " + e.code() + (e.message() == null ? "" : " (" + e.message() + ")");
                if (e.code() != null && (e.code().equals("InternalError") || e.code().equals("SlowDown")
                        || e.code().equals("ServiceUnavailable") || e.code().equals("NoSuchKey"))) {
                    throw new Unusable(line("delete", key, reason + "; a HEAD first before it is sent again"), null);
                }
                throw new Refused(line("delete", key, reason), key, KEY_IN_BATCH, e.code(), reason, true, null);
            }
        }
    }

    /**
     * Whether {@code e}, S3's answer to a DeleteObjects, refused the request as such (400, 405,
     * 501) rather than failing it: a 400 RequestTimeout is S3 waiting too long for the body, asked
     * again as any failure.
     */
    private static boolean refusedAsRequest(S3Exception e) {
        int status = e.statusCode();
        return (status == 400 || status == 405 || status == 501) && !"RequestTimeout".equals(errorCode(e));
    }

    /**
     * Whether {@code e}, S3's answer to a request sent once, refused it whole before doing any of it:
     * a 4xx but a 429 (throttled) and a 400 RequestTimeout (the body late, asked again as a failure).
     * A 5xx may come after part of it was done, so it is no such word.
     */
    private static boolean refusedWhole(S3Exception e) {
        int status = e.statusCode();
        return status >= 400 && status < 500 && status != 429 && !"RequestTimeout".equals(errorCode(e));
    }

    private static String errorCode(S3Exception e) {
        return e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
    }

    /** S3's answer {@code e} in a few words: {@code HTTP 405}, {@code HTTP 501 NotImplemented}. */
    private static String answerOf(S3Exception e) {
        String code = errorCode(e);
        return "HTTP " + e.statusCode() + (code == null ? "" : " " + code);
    }

    /**
     * Whether the server has no DeleteObjects, by its refusal {@code e} of one (see
     * {@link #refusedAsRequest}): so it says (501, NotImplemented), or it gave that one answer
     * {@link #REFUSALS_BEFORE_ONE_BY_ONE} times in a row, none taken between, the last at least
     * {@link #REFUSING_BEFORE_ONE_BY_ONE} after the first. From then on deletes go as DELETEs
     * ({@link #oneByOne}, warned of once), a DeleteObjects tried again every
     * {@link #BATCHES_TRIED_AGAIN_AFTER}. A lock's release so sent
     * may be sent twice: the JDK's HttpURLConnection sends a bodiless request again on its own when
     * the connection breaks before the answer, and that second DELETE deletes the claim another host
     * made after the first one landed (two holders; see {@link #deleteSentOnce}). So one passing
     * refusal (a gateway's, a proxy's) must not switch: until session 68 one did, for good.
     */
    private boolean hasNoBatchDelete(S3Exception e) {
        String answer = answerOf(e);
        boolean none;
        long now = nanos.getAsLong();
        synchronized (batchRefusalsLock) {
            if (answer.equals(batchRefusal)) {
                batchRefusals++;
            } else {
                batchRefusals = 1;
                batchRefusedSince = now;
            }
            batchRefusal = answer;
            Duration refusing = Duration.ofNanos(now - batchRefusedSince);
            none = e.statusCode() == 501 || "NotImplemented".equals(errorCode(e))
                    || batchRefusals >= REFUSALS_BEFORE_ONE_BY_ONE && refusing.compareTo(REFUSING_BEFORE_ONE_BY_ONE) >= 0;
            if (!none) {
                LOG.info("S3 at {} refused a DeleteObjects ({}, {} in a row over {} s; deletes go one by one after {}"
                        + " over {} s)", where, answer, batchRefusals, refusing.toSeconds(), REFUSALS_BEFORE_ONE_BY_ONE,
                        REFUSING_BEFORE_ONE_BY_ONE.toSeconds());
                return false;
            }
            oneByOneSince = now;
            if (oneByOne != null) {
                return true;
            }
            oneByOne = "S3 at " + where + " has no DeleteObjects (it answered " + answer
                    + (batchRefusals > 1 ? ", " + batchRefusals + " times in a row over " + refusing.toSeconds() + " s" : "")
                    + " at "
                    + Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS) + "): objects are deleted one"
                    + " by one (DeleteObjects tried again every " + BATCHES_TRIED_AGAIN_AFTER.toMinutes() + " minutes),"
                    + " and a lock's release, sent as a DELETE, may be sent twice and"
                    + " delete another host's claim (two holders)";
        }
        LOG.warn("{}", oneByOne);
        return true;
    }

    /**
     * Whether this delete goes one by one ({@link #oneByOne}): not the first after
     * {@link #BATCHES_TRIED_AGAIN_AFTER}, which goes as a DeleteObjects again; taken, it ends the
     * switch ({@link #batchDeleteTaken}), refused, it keeps it for as long again.
     */
    private boolean oneByOneNow() {
        if (oneByOne == null) {
            return false;
        }
        synchronized (batchRefusalsLock) {
            long now = nanos.getAsLong();
            if (oneByOne == null || now - oneByOneSince < BATCHES_TRIED_AGAIN_AFTER.toNanos()) {
                return oneByOne != null;
            }
            oneByOneSince = now; // one try each period: those meanwhile still go one by one
            return false;
        }
    }

    /** A DeleteObjects was taken: refusals before it are no run ({@link #hasNoBatchDelete}), and deletes go in batches again. */
    private void batchDeleteTaken() {
        String was;
        synchronized (batchRefusalsLock) {
            batchRefusals = 0;
            batchRefusal = null;
            was = oneByOne;
            oneByOne = null;
        }
        if (was != null) {
            LOG.info("S3 at {} takes DeleteObjects again: deletes go in batches again, lock releases as DeleteObjects", where);
        }
    }

    /**
     * Why deletes go one by one, as DELETEs that may be sent twice (lock releases among them), until
     * S3 takes a DeleteObjects again: for {@code chibifs status} and {@code stats}; null while it takes them.
     */
    String oneByOne() {
        return oneByOne;
    }

    /** {@link #deleteSentOnce} as a DELETE, for a server without DeleteObjects. */
    private void deleteSentOnceAlone(String key) throws IOException {
        count("delete");
        try {
            heard.sentOnce(() -> client.deleteObject(b -> b.bucket(bucket).key(key).overrideConfiguration(answerLimits)));
        } catch (S3Exception e) {
            if (e.statusCode() != 404) {
                throw failure("delete", key, e);
            }
        } catch (RuntimeException e) {
            throw notSentAgain(key, e);
        }
        answered();
    }

    /**
     * What a request sent once ({@link Heard#sentOnce}) failed with, {@code e}: where the SDK would
     * have sent it again, an {@link Unusable} that says what S3 answered the one attempt, if it did.
     */
    private IOException notSentAgain(String key, RuntimeException e) {
        if (e instanceof NotSentAgain || e.getCause() instanceof NotSentAgain) {
            String answer = Heard.firstAnswer(e);
            return new Unusable(line("delete", key, (answer == null ? "no answer came" : "S3 answered " + answer)
                    + "; a HEAD first before it is sent again"), e);
        }
        if (e instanceof SdkException sdk) {
            return failure("delete", key, sdk);
        }
        throw e;
    }

    private void answered() {
        unreachable = null;
    }

    /** Keeps {@code r}'s Date as {@link #uploadAnswered}, where it is the latest so far. */
    private void uploadAnswered(software.amazon.awssdk.core.SdkResponse r) {
        Instant at = r.sdkHttpResponse().firstMatchingHeader("Date").map(Bucket::httpDate).orElse(null);
        if (at != null) {
            uploadAnswered.accumulateAndGet(at, (was, now) -> was == null || now.isAfter(was) ? now : was);
        }
    }

    /**
     * The latest time S3 answered an upload from this host, by S3's clock (to the second): right
     * after an upload returns, no earlier than the time S3 gave that object. Null before any, or
     * where S3 sends no Date.
     */
    Instant uploadAnswered() {
        return uploadAnswered.get();
    }

    /** Why S3 is known to be unreachable, and since when (for {@code chibifs stats}); null while it answers. */
    String unreachableReason() {
        Away away = unreachable;
        return away == null ? null : away.reason() + " (since " + away.since() + ")";
    }

    void refuseWhileUnreachable(String op, String key) throws Unavailable {
        Away away = unreachable;
        if (away != null) {
            throw new Unavailable(line(op, key, away.reason() + ", asked again in the background"), null);
        }
    }

    /** One line: what was asked, of what, and why it failed (the SDK's messages run to paragraphs). */
    private IOException failure(String op, String key, SdkException e) {
        return failure(op, key, e, heard.takeHeard());
    }

    /** As {@link #failure(String, String, SdkException)}, where {@code answeredAtAll} says whether any attempt got an answer. */
    private IOException failure(String op, String key, SdkException e, boolean answeredAtAll) {
        if (e instanceof S3Exception s3) {
            answered(); // an error, but S3 is there to say it
            String code = s3.awsErrorDetails() == null ? null : s3.awsErrorDetails().errorCode();
            String reason = "HTTP " + s3.statusCode() + (code == null ? "" : " " + code);
            return new Refused(line(op, key, reason), key, s3.statusCode(), code, reason, e);
        }
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        if (answeredAtAll) {
            // S3 is there: this request failed, the others need not
            answered();
            if (e instanceof ApiCallTimeoutException || e instanceof ApiCallAttemptTimeoutException
                    || root instanceof java.net.SocketTimeoutException) {
                // a 429 or 503 whose Retry-After outlasted the limits, an answer that stalled: asked
                // again, it would wait as long again
                return new Unavailable(line(op, key, where + " answered, but the request did not succeed within its limits: "
                        + firstLine(root)), e);
            }
            return new Unusable(line(op, key, "the answer of " + where + " could not be used: " + firstLine(root)), e);
        }
        String reason = "cannot reach " + where + ": " + firstLine(root);
        Away before = unreachable;
        unreachable = new Away(reason, before != null ? before.since()
                : Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS));
        return new Unavailable(line(op, key, reason), e);
    }

    private String line(String op, String key, String reason) {
        return "S3 " + op + " " + uriOf(key) + ": " + reason + " (Input/output error)";
    }

    /** The object {@code key} as every line about it names it: {@code s3://bucket/key}. */
    String uriOf(String key) {
        return "s3://" + bucket + "/" + key;
    }

    @Override
    public void close() {
        partMovers.shutdownNow();
        readsAhead.shutdownNow();
        client.close();
    }
}
