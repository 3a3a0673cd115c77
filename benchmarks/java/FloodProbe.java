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
 * Each send gets KEYS "<run-id>:<client>:<thread>:<seq>" and one CSV row:
 *   client,thread,seq,key,msg_id,start_ns,end_ns,outcome,response_code,queue_id,queue_offset,remark
 * start_ns/end_ns are wall-clock ns; outcome is the SendStatus name of a result, else the exception's simple class
 * name; response_code is MQClientException/MQBrokerException.getResponseCode() (the status's code for a result:
 * 0, 10, 12, 11), else empty; remark the exception's message without the FAQ tail, an MQClientException's cause
 * appended as "(cause: Class: message)" (remoting.outcome.outcome_of's form), truncated to 300 characters.
 *
 * --warm-failures N (an experiment, default 0): before the load, each flood thread sends N messages with a 0 ms
 * timeout, so the failure path has run before the first real storm of failures.
 *
 * Stdout: "ready <wall ns>" once both producers are started and the topic's route is known; stdin: a line "stop"
 * (or EOF, or --duration-s passing) ends the load: no new sends; the sends in flight finish (at most their own
 * timeout), every row is written, "done <rows>" printed, and the JVM exits (the 4.9.x client leaves a non-daemon
 * thread behind after shutdown()).
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
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
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

    static final ConcurrentLinkedQueue<String> rows = new ConcurrentLinkedQueue<>();
    static volatile boolean stopping = false;

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
        if (!List.of("own", "shared", "none").contains(probeMode)) {
            throw new IllegalArgumentException("--probe-mode " + probeMode + "; allowed: own, shared, none");
        }

        DefaultMQProducer flood = new DefaultMQProducer("rmq-chaos-flood");
        flood.setNamesrvAddr(namesrv);
        flood.setSendMsgTimeout(floodTimeout);
        DefaultMQProducer probe = null;
        if (!probeMode.equals("none")) {
            probe = new DefaultMQProducer("rmq-chaos-probe");
            probe.setNamesrvAddr(namesrv);
            probe.setSendMsgTimeout(probeTimeout);
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
        if (probe != null) {
            probe.start();
        }
        Object floodInstance = flood.getDefaultMQProducerImpl().getmQClientFactory();
        Object probeInstance = probe == null ? null : probe.getDefaultMQProducerImpl().getmQClientFactory();
        System.out.println("flood client " + flood.getDefaultMQProducerImpl().getmQClientFactory().getClientId()
            + " retryTimesWhenSendFailed=" + flood.getRetryTimesWhenSendFailed()
            + " compressMsgBodyOverHowmuch=" + flood.getCompressMsgBodyOverHowmuch());
        if (probe != null) {
            System.out.println("probe client " + probe.getDefaultMQProducerImpl().getmQClientFactory().getClientId()
                + " same MQClientInstance as the flood: " + (floodInstance == probeInstance));
        }
        // the route, as the Python load has it before its first send (both look it up on the first send anyway)
        flood.fetchPublishMessageQueues(topic);
        if (probe != null) {
            probe.fetchPublishMessageQueues(topic);
        }

        if (warmFailures > 0) {
            warmFailurePath(flood, topic, floodThreads, floodSize, warmFailures);
        }

        BufferedWriter w = new BufferedWriter(new FileWriter(out, StandardCharsets.UTF_8), 1 << 20);
        w.write("client,thread,seq,key,msg_id,start_ns,end_ns,outcome,response_code,queue_id,queue_offset,remark\n");
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

        List<Thread> senders = new ArrayList<>();
        CountDownLatch go = new CountDownLatch(1);
        for (int i = 0; i < floodThreads; i++) {
            senders.add(sender(flood, "flood", i, topic, runId, floodSize, floodTimeout, go));
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
            stopping = true;
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();
        long end = System.nanoTime() + (long) (durationS * 1e9);
        while (!stopping && System.nanoTime() < end) {
            Thread.sleep(50);
        }
        stopping = true;
        long stopNs = wallNs();
        for (Thread t : senders) {
            t.join(TimeUnit.MILLISECONDS.toMillis(Math.max(floodTimeout, probeTimeout) + 5000));
        }
        writer.join(10000);
        drain(w);
        w.close();
        System.out.println("stopped " + stopNs);
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
                String key = runId + ":" + client + ":" + thread + ":" + seq;
                Message msg = new Message(topic, "TagA", key, body);
                long start = wallNs();
                String outcome;
                String code = "";
                String remark = "";
                String queueId = "";
                String queueOffset = "";
                String msgId;
                try {
                    SendResult r = producer.send(msg, timeout);
                    outcome = r.getSendStatus().name();
                    code = String.valueOf(STATUS_CODE.getOrDefault(r.getSendStatus(), -1));
                    msgId = r.getMsgId();
                    queueId = String.valueOf(r.getMessageQueue().getQueueId());
                    queueOffset = String.valueOf(r.getQueueOffset());
                } catch (MQClientException e) {
                    outcome = "MQClientException";
                    code = String.valueOf(e.getResponseCode());
                    remark = withoutTip(e.getErrorMessage());
                    if (e.getCause() != null) {
                        remark += " (cause: " + e.getCause().getClass().getSimpleName() + ": "
                            + withoutTip(e.getCause().getMessage()) + ")";
                    }
                    msgId = MessageClientIDSetter.getUniqID(msg);
                } catch (MQBrokerException e) {
                    outcome = "MQBrokerException";
                    code = String.valueOf(e.getResponseCode());
                    remark = e.getErrorMessage();
                    msgId = MessageClientIDSetter.getUniqID(msg);
                } catch (Throwable e) {
                    outcome = e.getClass().getSimpleName();
                    remark = withoutTip(e.getMessage());
                    msgId = MessageClientIDSetter.getUniqID(msg);
                }
                long end = wallNs();
                rows.add(String.join(",", client, String.valueOf(thread), String.valueOf(seq), key,
                    msgId == null ? "" : msgId, String.valueOf(start), String.valueOf(end), outcome, code, queueId,
                    queueOffset, csv(remark)));
                seq++;
            }
        }, client + "-" + thread);
        t.start();
        return t;
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
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --name value pairs, got " + argv[i]);
            }
            a.put(argv[i].substring(2), argv[++i]);
        }
        return a;
    }
}
