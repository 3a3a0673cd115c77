/*
 * FloodProbe: the flood + probe load of scenarios/slave-readonly-default.yaml, sent with the Apache RocketMQ Java
 * client itself, one CSV row per send (benchmarks/java_vs_python_outcomes.py drives it and compares the rows with
 * rmq-chaos's Python load).
 *
 * Run with Java's single-file source launcher against a distribution's jars (nothing compiled is kept):
 *
 *   java -cp "$ROCKETMQ_HOME/lib/*" benchmarks/java/FloodProbe.java --namesrv 127.0.0.1:9876 --out sends.csv
 *
 * Flood: --flood-threads (64) threads share one DefaultMQProducer (group rmq-chaos-flood), each a closed loop of
 * send(msg, --flood-timeout-ms 3000) with --flood-size (4000) byte bodies; retryTimesWhenSendFailed and
 * compressMsgBodyOverHowmuch stay at their defaults (2, 4096: a 4000 B body is not compressed).
 * Probe: one thread, send(msg, --probe-timeout-ms 30000), --probe-size (128) bytes, group rmq-chaos-probe, in
 * --probe-mode own (its own instanceName: its own MQClientInstance, Netty client and channels), shared (the same
 * instanceName as the flood: the same MQClientInstance, so the same channel to the broker; a flood timeout closes
 * it under the probe's request) or none. The 4.9.x default instanceName becomes "<pid>#<nanoTime>" per producer,
 * so two producers of one JVM only share an instance when both are given the same name.
 *
 * --retry-another-broker [true|false] (default false): setRetryAnotherBrokerWhenNotStoreOK on the flood's and the
 * probe's producers (a send answered FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE is sent again).
 *
 * --rate R (sends/s, default 0: the closed loop above): the flood as an open model instead. A scheduler hands one
 * slot every 1/R s (its intended wall-clock time) to a pool of senders that starts with --flood-threads threads and
 * grows, while slots wait and no sender is idle, up to --max-threads (default --flood-threads); a slot not started
 * within --max-lag-ms (5000) of its intended time is dropped (never sent, no row; counted on stdout), as rmq-chaos's
 * open model does (loads/keeper.py).
 *
 * Each send gets KEYS "<run-id>:<client>:<thread>:<seq>" and one CSV row:
 *   client,thread,seq,key,msg_id,start_ns,end_ns,outcome,response_code,queue_id,queue_offset,remark,
 *   broker,brokers_sent,intended_ns
 * start_ns/end_ns are wall-clock ns; outcome is the SendStatus name of a result, else the exception's simple class
 * name; response_code is MQClientException/MQBrokerException.getResponseCode() (the status's code for a result:
 * 0, 10, 12, 11), else empty; remark the exception's message without the FAQ tail, an MQClientException's cause
 * appended as "(cause: Class: message)" (remoting.outcome.outcome_of's form), truncated to 300 characters.
 * brokers_sent: the broker group of every attempt the client made, in order, "|"-separated (a SendMessageHook on the
 * producer sees each attempt in sendKernelImpl, in the sending thread); broker: the group the send ended on: a
 * result's message queue's broker name, for an exception the last attempt's group (if no attempt reached the hook:
 * the last group the client's "BrokersSent: [...]" text names, else empty). intended_ns: the slot's intended time
 * (open model), else start_ns.
 *
 * --prewarm-sends N (default 0): before the load (before "ready"), the flood's producer sends N messages of
 * --prewarm-size bytes (default 128: small, so that the pre-warm moves the commitlog's file boundaries, and with them
 * the moment a read-only slave stops replicating, as little as may be) from --flood-threads threads in closed loops,
 * no rows kept, so the JVM has loaded and compiled the send path before the
 * first timed send (a cold JVM on a busy machine took seconds per send at first, and an open-model flood then piled
 * up hundreds of sends waiting on the broker within its first second). Stdout: "prewarm <n> sends, <n> SEND_OK".
 *
 * --warm-failures N (an experiment, default 0): before the load, each flood thread sends N messages with a 0 ms
 * timeout, so the failure path has run before the first real storm of failures.
 *
 * Stdout: "ready <wall ns>" once both producers are started and the topic's route is known; stdin: a line "stop"
 * (or EOF, or --duration-s passing) ends the load: no new sends; the sends in flight finish (at most their own
 * timeout), every row is written, "dropped late <n> stopped <n>" (open model) and "done" printed, and the JVM exits
 * (the 4.9.x client leaves a non-daemon thread behind after shutdown()).
 *
 * Compiles against the 4.9.1 and the 5.3.0 client jars alike (only API both have).
 */

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Collections;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.hook.SendMessageContext;
import org.apache.rocketmq.client.hook.SendMessageHook;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;

public class FloodProbe {
    static final String TIP = "\nSee ";
    static final String TIP2 = "\nFor more information, please visit the url";
    static final Map<SendStatus, Integer> STATUS_CODE = Map.of(SendStatus.SEND_OK, 0,
        SendStatus.FLUSH_DISK_TIMEOUT, 10, SendStatus.FLUSH_SLAVE_TIMEOUT, 12, SendStatus.SLAVE_NOT_AVAILABLE, 11);

    static final Pattern BROKERS_SENT = Pattern.compile("BrokersSent: \\[([^\\]]*)\\]");
    static final long[] POISON = new long[0];

    static final ConcurrentLinkedQueue<String> rows = new ConcurrentLinkedQueue<>();
    static volatile boolean stopping = false;
    static final CountDownLatch stopSignal = new CountDownLatch(1);
    /** The broker group of each attempt of the send in progress on this thread (filled by ATTEMPTS_HOOK). */
    static final ThreadLocal<List<String>> attempts = ThreadLocal.withInitial(ArrayList::new);
    static final SendMessageHook ATTEMPTS_HOOK = new SendMessageHook() {
        @Override
        public String hookName() {
            return "floodprobe-attempts";
        }

        @Override
        public void sendMessageBefore(SendMessageContext context) {
            if (context.getMq() != null) {
                attempts.get().add(context.getMq().getBrokerName());
            }
        }

        @Override
        public void sendMessageAfter(SendMessageContext context) {
        }
    };
    static final AtomicLong droppedLate = new AtomicLong();
    static final AtomicLong droppedStopped = new AtomicLong();

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = parse(argv);
        String namesrv = a.getOrDefault("namesrv", "127.0.0.1:9876");
        String topic = a.getOrDefault("topic", "ChaosTopic");
        String out = a.getOrDefault("out", "sends.csv");
        String runId = a.getOrDefault("run-id", "java");
        String probeMode = a.getOrDefault("probe-mode", "own");
        int floodThreads = Integer.parseInt(a.getOrDefault("flood-threads", "64"));
        int floodTimeout = Integer.parseInt(a.getOrDefault("flood-timeout-ms", "3000"));
        int floodSize = Integer.parseInt(a.getOrDefault("flood-size", "4000"));
        int probeTimeout = Integer.parseInt(a.getOrDefault("probe-timeout-ms", "30000"));
        int probeSize = Integer.parseInt(a.getOrDefault("probe-size", "128"));
        double durationS = Double.parseDouble(a.getOrDefault("duration-s", "600"));
        int warmFailures = Integer.parseInt(a.getOrDefault("warm-failures", "0"));
        int prewarmSends = Integer.parseInt(a.getOrDefault("prewarm-sends", "0"));
        int prewarmSize = Integer.parseInt(a.getOrDefault("prewarm-size", "128"));
        boolean retryAnotherBroker = Boolean.parseBoolean(a.getOrDefault("retry-another-broker", "false"));
        double rate = Double.parseDouble(a.getOrDefault("rate", "0"));
        int maxThreads = Integer.parseInt(a.getOrDefault("max-threads", String.valueOf(floodThreads)));
        long maxLagNs = Long.parseLong(a.getOrDefault("max-lag-ms", "5000")) * 1_000_000L;
        if (!List.of("own", "shared", "none").contains(probeMode)) {
            throw new IllegalArgumentException("--probe-mode " + probeMode + "; allowed: own, shared, none");
        }

        DefaultMQProducer flood = new DefaultMQProducer("rmq-chaos-flood");
        flood.setNamesrvAddr(namesrv);
        flood.setSendMsgTimeout(floodTimeout);
        flood.setRetryAnotherBrokerWhenNotStoreOK(retryAnotherBroker);
        DefaultMQProducer probe = null;
        if (!probeMode.equals("none")) {
            probe = new DefaultMQProducer("rmq-chaos-probe");
            probe.setNamesrvAddr(namesrv);
            probe.setSendMsgTimeout(probeTimeout);
            probe.setRetryAnotherBrokerWhenNotStoreOK(retryAnotherBroker);
        }
        if (probeMode.equals("shared")) {
            flood.setInstanceName("floodprobe-shared");
            probe.setInstanceName("floodprobe-shared");
        } else {
            flood.setInstanceName("floodprobe-flood");
            if (probe != null) {
                probe.setInstanceName("floodprobe-probe");
            }
        }
        flood.start();
        flood.getDefaultMQProducerImpl().registerSendMessageHook(ATTEMPTS_HOOK);
        if (probe != null) {
            probe.start();
            probe.getDefaultMQProducerImpl().registerSendMessageHook(ATTEMPTS_HOOK);
        }
        Object floodInstance = flood.getDefaultMQProducerImpl().getmQClientFactory();
        Object probeInstance = probe == null ? null : probe.getDefaultMQProducerImpl().getmQClientFactory();
        System.out.println("flood client " + flood.getDefaultMQProducerImpl().getmQClientFactory().getClientId()
            + " retryTimesWhenSendFailed=" + flood.getRetryTimesWhenSendFailed()
            + " compressMsgBodyOverHowmuch=" + flood.getCompressMsgBodyOverHowmuch()
            + " retryAnotherBrokerWhenNotStoreOK=" + flood.isRetryAnotherBrokerWhenNotStoreOK()
            + (rate > 0 ? " open model " + rate + "/s, " + floodThreads + ".." + maxThreads + " threads" : ""));
        if (probe != null) {
            System.out.println("probe client " + probe.getDefaultMQProducerImpl().getmQClientFactory().getClientId()
                + " same MQClientInstance as the flood: " + (floodInstance == probeInstance));
        }
        // the route, as the Python load has it before its first send (both look it up on the first send anyway)
        flood.fetchPublishMessageQueues(topic);
        if (probe != null) {
            probe.fetchPublishMessageQueues(topic);
        }

        if (prewarmSends > 0) {
            prewarm(flood, topic, floodThreads, prewarmSize, floodTimeout, prewarmSends);
        }
        if (warmFailures > 0) {
            warmFailurePath(flood, topic, floodThreads, floodSize, warmFailures);
        }

        BufferedWriter w = new BufferedWriter(new FileWriter(out, StandardCharsets.UTF_8), 1 << 20);
        w.write("client,thread,seq,key,msg_id,start_ns,end_ns,outcome,response_code,queue_id,queue_offset,remark,"
            + "broker,brokers_sent,intended_ns\n");
        Thread writer = new Thread(() -> {
            while (true) {
                boolean last = stopping;
                try {
                    drain(w);
                    w.flush();
                    if (last && rows.isEmpty()) {
                        return;
                    }
                    Thread.sleep(500);
                } catch (IOException | InterruptedException e) {
                    e.printStackTrace();
                    return;
                }
            }
        }, "csv-writer");
        writer.setDaemon(true);

        List<Thread> senders = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch go = new CountDownLatch(1);
        OpenFlood open = null;
        if (rate > 0) {
            open = new OpenFlood(flood, topic, runId, floodSize, floodTimeout, rate, floodThreads, maxThreads,
                maxLagNs, go, senders);
        } else {
            for (int i = 0; i < floodThreads; i++) {
                senders.add(sender(flood, "flood", i, topic, runId, floodSize, floodTimeout, go));
            }
        }
        if (probe != null) {
            senders.add(sender(probe, "probe", 0, topic, runId, probeSize, probeTimeout, go));
        }
        writer.start();
        System.out.println("ready " + wallNs());
        System.out.flush();
        go.countDown();

        Thread stdin = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.trim().equals("stop")) {
                        break;
                    }
                }
            } catch (IOException e) {
                // EOF-like: stop
            }
            stopSignal.countDown();
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();
        stopSignal.await((long) (durationS * 1e9), TimeUnit.NANOSECONDS);
        stopping = true;
        long stopNs = wallNs();
        if (open != null) {
            open.stop();
        }
        List<Thread> all;
        synchronized (senders) {
            all = new ArrayList<>(senders);
        }
        for (Thread t : all) {
            t.join(TimeUnit.MILLISECONDS.toMillis(Math.max(floodTimeout, probeTimeout) + 5000));
        }
        writer.join(10000);
        drain(w);
        w.close();
        System.out.println("stopped " + stopNs);
        if (open != null) {
            System.out.println("dropped late " + droppedLate.get() + " stopped " + droppedStopped.get()
                + " threads " + open.threads.get());
        }
        System.out.println("done");
        System.out.flush();
        flood.shutdown();
        if (probe != null) {
            probe.shutdown();
        }
        System.exit(0);
    }

    static Thread sender(DefaultMQProducer producer, String client, int thread, String topic, String runId, int size,
                         int timeout, CountDownLatch go) {
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'x');
        Thread t = new Thread(() -> {
            try {
                go.await();
            } catch (InterruptedException e) {
                return;
            }
            long seq = 0;
            while (!stopping) {
                sendOne(producer, client, thread, seq, topic, runId, body, timeout, 0L);
                seq++;
            }
        }, client + "-" + thread);
        t.start();
        return t;
    }

    /** One send and its row; `intendedNs` 0: the send's start. */
    static void sendOne(DefaultMQProducer producer, String client, int thread, long seq, String topic, String runId,
                        byte[] body, int timeout, long intendedNs) {
        String key = runId + ":" + client + ":" + thread + ":" + seq;
        Message msg = new Message(topic, "TagA", key, body);
        List<String> sent = attempts.get();
        sent.clear();
        long start = wallNs();
        String outcome;
        String code = "";
        String remark = "";
        String queueId = "";
        String queueOffset = "";
        String broker = "";
        String msgId;
        try {
            SendResult r = producer.send(msg, timeout);
            outcome = r.getSendStatus().name();
            code = String.valueOf(STATUS_CODE.getOrDefault(r.getSendStatus(), -1));
            msgId = r.getMsgId();
            queueId = String.valueOf(r.getMessageQueue().getQueueId());
            queueOffset = String.valueOf(r.getQueueOffset());
            broker = r.getMessageQueue().getBrokerName();
        } catch (MQClientException e) {
            outcome = "MQClientException";
            code = String.valueOf(e.getResponseCode());
            remark = withoutTip(e.getErrorMessage());
            if (e.getCause() != null) {
                remark += " (cause: " + e.getCause().getClass().getSimpleName() + ": "
                    + withoutTip(e.getCause().getMessage()) + ")";
            }
            msgId = MessageClientIDSetter.getUniqID(msg);
            broker = lastBroker(sent, e.getErrorMessage());
        } catch (MQBrokerException e) {
            outcome = "MQBrokerException";
            code = String.valueOf(e.getResponseCode());
            remark = e.getErrorMessage();
            msgId = MessageClientIDSetter.getUniqID(msg);
            broker = lastBroker(sent, null);
        } catch (Throwable e) {
            outcome = e.getClass().getSimpleName();
            remark = withoutTip(e.getMessage());
            msgId = MessageClientIDSetter.getUniqID(msg);
            broker = lastBroker(sent, e.getMessage());
        }
        long end = wallNs();
        rows.add(String.join(",", client, String.valueOf(thread), String.valueOf(seq), key,
            msgId == null ? "" : msgId, String.valueOf(start), String.valueOf(end), outcome, code, queueId,
            queueOffset, csv(remark), broker, String.join("|", sent),
            String.valueOf(intendedNs == 0 ? start : intendedNs)));
    }

    /** The group of the last attempt the hook saw, else the last one a "BrokersSent: [...]" text names. */
    static String lastBroker(List<String> sent, String text) {
        if (!sent.isEmpty()) {
            return sent.get(sent.size() - 1);
        }
        if (text != null) {
            Matcher m = BROKERS_SENT.matcher(text);
            if (m.find()) {
                String last = "";
                for (String b : m.group(1).split(",")) {
                    b = b.trim();
                    if (!b.isEmpty() && !b.equals("null")) {
                        last = b;
                    }
                }
                return last;
            }
        }
        return "";
    }

    /**
     * The flood as an open model: one slot every 1/rate s from the start, handed to a pool of sender threads that
     * grows (one thread per slot at most) while slots wait and no sender is idle, up to maxThreads.
     */
    static final class OpenFlood {
        final LinkedBlockingQueue<long[]> slots = new LinkedBlockingQueue<>();
        final AtomicInteger idle = new AtomicInteger();
        final AtomicInteger threads = new AtomicInteger();
        final List<Thread> senders;
        final Thread scheduler;
        final DefaultMQProducer producer;
        final String topic;
        final String runId;
        final byte[] body;
        final int timeout;
        final long maxLagNs;
        final int maxThreads;

        OpenFlood(DefaultMQProducer producer, String topic, String runId, int size, int timeout, double rate,
                  int initialThreads, int maxThreads, long maxLagNs, CountDownLatch go, List<Thread> senders) {
            this.producer = producer;
            this.topic = topic;
            this.runId = runId;
            this.body = new byte[size];
            Arrays.fill(body, (byte) 'x');
            this.timeout = timeout;
            this.maxLagNs = maxLagNs;
            this.maxThreads = maxThreads;
            this.senders = senders;
            for (int i = 0; i < initialThreads; i++) {
                startSender();
            }
            scheduler = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                long t0 = System.nanoTime();
                long wall0 = wallNs();
                for (long k = 0; !stopping; k++) {
                    long due = t0 + (long) (k * 1e9 / rate);
                    long left;
                    while (!stopping && (left = due - System.nanoTime()) > 0) {
                        LockSupport.parkNanos(left);  // the schedule's own clock, not waiting for an event
                    }
                    if (stopping) {
                        break;
                    }
                    slots.add(new long[] {k, wall0 + (due - t0)});
                    if (idle.get() < slots.size() && threads.get() < this.maxThreads) {
                        startSender();
                    }
                }
            }, "open-scheduler");
            scheduler.start();
        }

        void startSender() {
            int index = threads.getAndIncrement();
            Thread t = new Thread(() -> {
                while (true) {
                    long[] slot;
                    idle.incrementAndGet();
                    try {
                        slot = slots.take();
                    } catch (InterruptedException e) {
                        return;
                    } finally {
                        idle.decrementAndGet();
                    }
                    if (slot == POISON) {
                        return;
                    }
                    if (wallNs() - slot[1] > maxLagNs) {
                        droppedLate.incrementAndGet();
                        continue;
                    }
                    sendOne(producer, "flood", index, slot[0], topic, runId, body, timeout, slot[1]);
                }
            }, "flood-" + index);
            senders.add(t);
            t.start();
        }

        /** No new slots; the slots not taken yet are counted as stopped; every sender ends after its send. */
        void stop() throws InterruptedException {
            LockSupport.unpark(scheduler);
            scheduler.join();
            List<long[]> left = new ArrayList<>();
            slots.drainTo(left);
            droppedStopped.addAndGet(left.size());
            for (int i = 0; i < threads.get(); i++) {
                slots.add(POISON);
            }
        }
    }

    /** `count` sends from `threads` threads in closed loops before the load, outcomes only counted. */
    static void prewarm(DefaultMQProducer producer, String topic, int threads, int size, int timeout, int count)
        throws InterruptedException {
        AtomicInteger left = new AtomicInteger(count);
        AtomicInteger ok = new AtomicInteger();
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> {
                byte[] body = new byte[size];
                Arrays.fill(body, (byte) 'x');
                while (left.getAndDecrement() > 0) {
                    try {
                        if (producer.send(new Message(topic, "TagA", "prewarm", body), timeout).getSendStatus()
                            == SendStatus.SEND_OK) {
                            ok.incrementAndGet();
                        }
                    } catch (Throwable e) {
                        // counted as not SEND_OK
                    }
                }
            }, "prewarm-" + i);
            t.start();
            ts.add(t);
        }
        for (Thread t : ts) {
            t.join();
        }
        System.out.println("prewarm " + count + " sends, " + ok.get() + " SEND_OK");
    }

    /**
     * An experiment: every flood thread sends `count` messages with a 0 ms timeout before the load starts (no rows),
     * so the JVM has run (loaded, compiled) the client's failure path -- timeout, channel close, retry, reconnect --
     * before the first real storm of failures, as it has not in a client that was healthy until then.
     */
    static void warmFailurePath(DefaultMQProducer producer, String topic, int threads, int size, int count)
        throws InterruptedException {
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> {
                for (int n = 0; n < count; n++) {
                    try {
                        producer.send(new Message(topic, "TagA", "warm", new byte[size]), 0);
                    } catch (Throwable e) {
                        // the point is the failure
                    }
                }
            });
            t.start();
            ts.add(t);
        }
        for (Thread t : ts) {
            t.join();
        }
        Thread.sleep(1000);
    }

    static void drain(BufferedWriter w) throws IOException {
        String row;
        while ((row = rows.poll()) != null) {
            w.write(row);
            w.write('\n');
        }
    }

    static long wallNs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    static String withoutTip(String text) {
        if (text == null) {
            return "";
        }
        for (String tip : new String[] {TIP, TIP2}) {
            int cut = text.indexOf(tip);
            if (cut >= 0) {
                text = text.substring(0, cut);
            }
        }
        return text;
    }

    static String csv(String text) {
        if (text.length() > 300) {
            text = text.substring(0, 300);
        }
        text = text.replace('\n', ' ').replace('\r', ' ');
        return "\"" + text.replace("\"", "\"\"") + "\"";
    }

    static Map<String, String> parse(String[] argv) {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            if (!argv[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --name value pairs (or a bare --flag), got " + argv[i]);
            }
            boolean bare = i + 1 >= argv.length || argv[i + 1].startsWith("--");
            a.put(argv[i].substring(2), bare ? "true" : argv[++i]);
        }
        return a;
    }
}
