// JavaBench: the official Java client (org.apache.inlong:tubemq-client) driven through
// the same workloads as bench/cpp/native_bench.cc, for python -m bench. The server
// jar's CliProducer/CliConsumer time their whole run, start-up and group join included,
// so their figures cannot be set beside a timed section; this program times the same
// section as our drivers. It is a long-lived process, as a Java service is: the runner
// keeps it for the cold window, the untimed warm-up (JIT, class loading) and every
// measured window, and each window answers one JSON line on stdout.
//
//   java -cp <client classpath>:<dir> JavaBench --master H:P --variant default|tuned
//   stdin:  window MODE SIZE TOPIC SECONDS MAX_COUNT ATTRS RATE | quit
//
// The protocol and the modes are those of bench/py_worker.py. "default" is the client
// as it comes; "tuned" is what a Java user would set for throughput and for latency
// (see TUNED below; the runner adds the JVM flags and names both in the report).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.inlong.tubemq.client.common.PeerInfo;
import org.apache.inlong.tubemq.client.config.ConsumerConfig;
import org.apache.inlong.tubemq.client.config.TubeClientConfig;
import org.apache.inlong.tubemq.client.consumer.ConsumePosition;
import org.apache.inlong.tubemq.client.consumer.ConsumerResult;
import org.apache.inlong.tubemq.client.consumer.MessageListener;
import org.apache.inlong.tubemq.client.consumer.PullMessageConsumer;
import org.apache.inlong.tubemq.client.consumer.PushMessageConsumer;
import org.apache.inlong.tubemq.client.factory.MessageSessionFactory;
import org.apache.inlong.tubemq.client.factory.TubeSingleSessionFactory;
import org.apache.inlong.tubemq.client.producer.MessageProducer;
import org.apache.inlong.tubemq.client.producer.MessageSentCallback;
import org.apache.inlong.tubemq.client.producer.MessageSentResult;
import org.apache.inlong.tubemq.corebase.Message;

public final class JavaBench {
  private static final int IN_FLIGHT = 20000; // as our drivers' window
  private static final int PARTITIONS = 4; // of every bench topic (bench/runner.py)
  private static final long DEFAULT_NOT_FOUND_WAIT_MS = 400; // the client's own default
  // The tuned variant's client settings, printed in the ready line for the report:
  // a push consumer with one fetch thread per partition for the backlog reads, and for
  // the latency windows a pull consumer that rests 10 ms (not 400) after an empty
  // fetch, confirms in local memory (no confirm round trip per batch) and checks for a
  // ready partition every 1 ms (default 5): what a Java user sets for latency.
  private static final int TUNED_FETCH_THREADS = PARTITIONS;
  private static final long TUNED_NOT_FOUND_WAIT_MS = 10;
  private static final long TUNED_READY_CHECK_SLICE_MS = 1;
  // A latency sender's shortest sleep (Thread.sleep sleeps whole milliseconds anyway);
  // the same in every driver (bench/py_worker.py SENDER_TICK_S).
  private static final long SENDER_TICK_MS = 1;
  // A latency window's percentiles are those of the messages sent after its first
  // second; the first message's delay is reported apart (bench/py_worker.py,
  // LATENCY_SETTLE_S, says why).
  private static final long LATENCY_SETTLE_NANOS = 1_000_000_000L;
  static final String TUNED =
      "consume: push consumer, setPushFetchThreadCnt(" + TUNED_FETCH_THREADS + "); "
          + "latency: pull consumer, setMsgNotFoundWaitPeriodMs(" + TUNED_NOT_FOUND_WAIT_MS
          + "), setPullConfirmInLocal(true), "
          + "setPullConsumeReadyChkSliceMs(" + TUNED_READY_CHECK_SLICE_MS + ")";

  private final String master;
  private final boolean tuned;
  private final MessageSessionFactory factory;
  private MessageProducer producer;
  private final Set<String> published = new HashSet<>();
  private int groups = 0;

  private JavaBench(String master, boolean tuned) throws Throwable {
    this.master = master;
    this.tuned = tuned;
    this.factory = new TubeSingleSessionFactory(new TubeClientConfig(master));
  }

  public static void main(String[] argv) throws Throwable {
    if (argv.length != 4 || !argv[0].equals("--master") || !argv[2].equals("--variant")) {
      System.err.println("usage: JavaBench --master H:P --variant default|tuned");
      System.exit(2);
    }
    JavaBench bench = new JavaBench(argv[1], argv[3].equals("tuned"));
    System.out.printf(
        "{\"ready\": true, \"cpu_s\": %.6f, \"settings\": \"%s\"}%n",
        cpuSeconds(), bench.tuned ? TUNED : "client defaults");
    System.out.flush();
    BufferedReader commands =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = commands.readLine()) != null) {
      String[] words = line.trim().split("\\s+");
      if (words[0].equals("quit") || words[0].isEmpty()) {
        break;
      }
      String answer;
      try {
        if (!words[0].equals("window") || words.length != 8) {
          throw new IllegalArgumentException("bad command " + line);
        }
        answer =
            bench.window(
                words[1],
                Integer.parseInt(words[2]),
                words[3],
                Double.parseDouble(words[4]),
                Long.parseLong(words[5]),
                words[6].equals("1"),
                Double.parseDouble(words[7]));
      } catch (Throwable error) { // answered, so the runner can say which window failed
        answer = "{\"error\": \"" + String.valueOf(error).replace("\"", "'") + "\"}";
      }
      System.out.println(answer);
      System.out.flush();
    }
    bench.factory.shutdown();
    // The client library leaves non-daemon threads behind after shutdown.
    System.exit(0);
  }

  private String window(
      String mode, int size, String topic, double seconds, long maxCount, boolean attrs,
      double rate)
      throws Throwable {
    switch (mode) {
      case "produce-sync":
      case "produce-async":
        return produce(mode.equals("produce-async"), size, topic, seconds, maxCount, attrs);
      case "consume":
      case "consume-attrs":
        boolean readAttrs = mode.equals("consume-attrs");
        return tuned
            ? consumePush(readAttrs, topic, seconds, maxCount)
            : consumePull(readAttrs, topic, seconds, maxCount);
      case "latency":
        return latency(size, topic, seconds, rate);
      default:
        throw new IllegalArgumentException("unknown mode " + mode);
    }
  }

  private static double cpuSeconds() {
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    return os.getProcessCpuTime() / 1e9;
  }

  private static String result(long count, long bytes, double elapsed, double cpu) {
    return String.format(
        "{\"count\": %d, \"bytes\": %d, \"elapsed_s\": %.6f, \"cpu_s\": %.6f}",
        count, bytes, elapsed, cpu);
  }

  // The producer of the process, created once; each topic is published (and the broker
  // connected with one send) before its first window.
  private MessageProducer producer(String topic) throws Throwable {
    if (producer == null) {
      producer = factory.createProducer();
    }
    if (published.add(topic)) {
      producer.publish(topic);
      // With the backlog's attributes, as it may land in a backlog consume-attrs reads.
      Message hello = new Message(topic, "xxxxxxxx".getBytes(StandardCharsets.US_ASCII));
      hello.setAttrKeyVal("region", "eu-west");
      hello.setAttrKeyVal("tenant", "bench");
      producer.sendMessage(hello);
    }
    return producer;
  }

  private String group() {
    return "bench_java_" + ProcessHandle.current().pid() + "_" + (++groups);
  }

  // Counts failed sends (keeping the first one's reason) and gives each reply's place
  // in the in-flight window back.
  private static MessageSentCallback windowed(
      Semaphore window, AtomicLong failed, AtomicReference<String> reason) {
    return new MessageSentCallback() {
      @Override
      public void onMessageSent(MessageSentResult result) {
        if (!result.isSuccess()) {
          failed.incrementAndGet();
          reason.compareAndSet(null, result.getErrCode() + " " + result.getErrMsg());
        }
        window.release();
      }

      @Override
      public void onException(Throwable error) {
        failed.incrementAndGet();
        reason.compareAndSet(null, String.valueOf(error));
        window.release();
      }
    };
  }

  // A few distinct payloads, built before the clock starts.
  private static List<byte[]> payloads(int size) {
    Random random = new Random(7);
    List<byte[]> out = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      byte[] payload = new byte[size];
      for (int j = 0; j < size; j++) {
        payload[j] = (byte) ('a' + random.nextInt(26));
      }
      out.add(payload);
    }
    return out;
  }

  private String produce(
      boolean async, int size, String topic, double seconds, long maxCount, boolean attrs)
      throws Throwable {
    List<byte[]> bodies = payloads(size);
    MessageProducer producer = producer(topic);
    Semaphore window = new Semaphore(IN_FLIGHT);
    AtomicLong failed = new AtomicLong();
    AtomicReference<String> reason = new AtomicReference<>();
    MessageSentCallback callback = windowed(window, failed, reason);
    double cpuBefore = cpuSeconds();
    long started = System.nanoTime();
    long deadline = started + (long) (seconds * 1e9);
    long count = 0;
    while (count < maxCount) {
      // The clock is read every 256 sends.
      if ((count & 255) == 0 && count > 0 && System.nanoTime() >= deadline) {
        break;
      }
      Message message = new Message(topic, bodies.get((int) (count & 15)));
      if (attrs) {
        message.setAttrKeyVal("region", "eu-west");
        message.setAttrKeyVal("tenant", "bench");
      }
      if (async) {
        window.acquire();
        producer.sendMessage(message, callback);
      } else {
        MessageSentResult sent = producer.sendMessage(message);
        if (!sent.isSuccess()) {
          failed.incrementAndGet();
          reason.compareAndSet(null, sent.getErrCode() + " " + sent.getErrMsg());
        }
      }
      count++;
    }
    if (async) {
      window.acquire(IN_FLIGHT); // every reply is in
    }
    double elapsed = (System.nanoTime() - started) / 1e9;
    double cpu = cpuSeconds() - cpuBefore;
    // Failed sends are not counted, and are reported (the runner's report lists them):
    // the client as it comes fails some of many large async sends on a busy machine
    // ("ClientClosedException: Client has bean closed"), and the window goes on.
    long sent = count - failed.get();
    String head = result(sent, sent * size, elapsed, cpu);
    if (failed.get() == 0) {
      return head;
    }
    return String.format(
        "%s, \"failed\": %d, \"failure\": \"%s\"}",
        head.substring(0, head.length() - 1),
        failed.get(),
        String.valueOf(reason.get()).replace("\"", "'").replace("\\", "/"));
  }

  private static long readMessage(Message message, boolean readAttrs) {
    byte[] data = message.getData();
    long sum = data.length == 0 ? 0 : data[0];
    if (readAttrs) {
      sum += message.getAttrValue("region").length() + message.getAttrValue("tenant").length();
    }
    return sum;
  }

  private ConsumerConfig consumerConfig(ConsumePosition position, long notFoundWait) {
    ConsumerConfig config = new ConsumerConfig(master, group());
    config.setConsumePosition(position);
    config.setMsgNotFoundWaitPeriodMs(notFoundWait);
    config.setHeartbeatPeriodMs(1000); // joins settle faster, as for our drivers
    return config;
  }

  // The default client: a pull consumer confirming each batch, as JavaBench always did.
  private String consumePull(boolean readAttrs, String topic, double seconds, long maxCount)
      throws Throwable {
    PullMessageConsumer consumer =
        factory.createPullConsumer(
            consumerConfig(ConsumePosition.CONSUMER_FROM_FIRST_OFFSET, DEFAULT_NOT_FOUND_WAIT_MS));
    try {
      consumer.subscribe(topic, null);
      consumer.completeSubscribe();
      // Joining the group and the first batch are outside the measure, as for ours.
      ConsumerResult batch = null;
      long joinDeadline = System.nanoTime() + 120_000_000_000L;
      while (batch == null) {
        if (System.nanoTime() > joinDeadline) {
          throw new IllegalStateException("no message within 120 s");
        }
        ConsumerResult next = consumer.getMessage();
        if (next.isSuccess() && !next.getMessageList().isEmpty()) {
          batch = next;
        } else {
          Thread.sleep(5);
        }
      }
      double cpuBefore = cpuSeconds();
      long started = System.nanoTime();
      long deadline = started + (long) (seconds * 1e9);
      long received = 0;
      long bytes = 0;
      long checksum = 0;
      long giveUp = 0;
      while (true) {
        if (batch != null) {
          for (Message message : batch.getMessageList()) {
            if (received == maxCount) {
              break;
            }
            checksum += readMessage(message, readAttrs);
            bytes += message.getData().length;
            received++;
          }
          consumer.confirmConsume(batch.getConfirmContext(), true);
          giveUp = System.nanoTime() + 5_000_000_000L;
        }
        if (received >= maxCount || System.nanoTime() >= deadline) {
          break;
        }
        if (System.nanoTime() > giveUp) {
          throw new IllegalStateException("the backlog ended after " + received + " messages");
        }
        ConsumerResult next = consumer.getMessage();
        batch = next.isSuccess() ? next : null;
      }
      double elapsed = (System.nanoTime() - started) / 1e9;
      double cpu = cpuSeconds() - cpuBefore;
      if (checksum == 0) {
        throw new IllegalStateException("every value was empty");
      }
      return result(received, bytes, elapsed, cpu);
    } finally {
      consumer.shutdown();
    }
  }

  // The tuned client: a push consumer whose fetch threads (one per partition) call the
  // listener; the window runs from the first message to the last counted one.
  private String consumePush(boolean readAttrs, String topic, double seconds, long maxCount)
      throws Throwable {
    ConsumerConfig config = consumerConfig(ConsumePosition.CONSUMER_FROM_FIRST_OFFSET, DEFAULT_NOT_FOUND_WAIT_MS);
    config.setPushFetchThreadCnt(TUNED_FETCH_THREADS);
    AtomicLong received = new AtomicLong();
    AtomicLong bytes = new AtomicLong();
    AtomicLong checksum = new AtomicLong();
    AtomicLong started = new AtomicLong();
    AtomicLong ended = new AtomicLong();
    double[] cpuBefore = new double[1];
    CountDownLatch first = new CountDownLatch(1);
    CountDownLatch done = new CountDownLatch(1);
    // Set when the window closes: later batches are not counted.
    AtomicBoolean closed = new AtomicBoolean();
    AtomicReference<RuntimeException> failure = new AtomicReference<>();
    PushMessageConsumer consumer = factory.createPushConsumer(config);
    try {
      consumer.subscribe(
          topic,
          null,
          new MessageListener() {
            @Override
            public void receiveMessages(PeerInfo peer, List<Message> messages) {
              if (closed.get()) {
                return;
              }
              if (started.get() == 0 && started.compareAndSet(0, -1)) {
                cpuBefore[0] = cpuSeconds();
                started.set(System.nanoTime());
                first.countDown();
              }
              long sum = 0;
              long size = 0;
              try {
                for (Message message : messages) {
                  sum += readMessage(message, readAttrs);
                  size += message.getData().length;
                }
              } catch (RuntimeException error) {
                // The push consumer would only log it: end the window with it instead.
                failure.compareAndSet(null, error);
                done.countDown();
                return;
              }
              long before = received.getAndAdd(messages.size());
              if (before < maxCount) {
                checksum.addAndGet(sum);
                bytes.addAndGet(size);
                if (before + messages.size() >= maxCount) {
                  ended.compareAndSet(0, System.nanoTime());
                  done.countDown();
                }
              }
            }

            @Override
            public Executor getExecutor() {
              return null; // called on the fetch threads
            }

            @Override
            public void stop() {}
          });
      consumer.completeSubscribe();
      if (!first.await(120, TimeUnit.SECONDS)) {
        throw new IllegalStateException("no message within 120 s");
      }
      while (started.get() <= 0) {
        Thread.onSpinWait();
      }
      long deadline = started.get() + (long) (seconds * 1e9);
      done.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      closed.set(true);
      ended.compareAndSet(0, System.nanoTime());
      if (failure.get() != null) {
        throw failure.get();
      }
      double cpu = cpuSeconds() - cpuBefore[0];
      long count = Math.min(received.get(), maxCount);
      if (checksum.get() == 0) {
        throw new IllegalStateException("every value was empty");
      }
      // A listener call still running when the window closed may add its batch after
      // `ended`: at most one batch per fetch thread, against a whole window's count.
      return result(count, bytes.get(), (ended.get() - started.get()) / 1e9, cpu);
    } finally {
      consumer.shutdown();
    }
  }

  // A sender thread sends at `rate` with its System.nanoTime() in the first 8 bytes
  // (little-endian); the consumer, which holds every partition before the first send,
  // measures the delay.
  private String latency(int size, String topic, double seconds, double rate)
      throws Throwable {
    long count = Math.max(1, (long) (seconds * rate));
    MessageProducer producer = producer(topic);
    ConsumerConfig config = consumerConfig(ConsumePosition.CONSUMER_FROM_LATEST_OFFSET,
        tuned ? TUNED_NOT_FOUND_WAIT_MS : DEFAULT_NOT_FOUND_WAIT_MS);
    if (tuned) {
      config.setPullConfirmInLocal(true);
      config.setPullConsumeReadyChkSliceMs(TUNED_READY_CHECK_SLICE_MS);
    }
    PullMessageConsumer consumer = factory.createPullConsumer(config);
    try {
      consumer.subscribe(topic, null);
      consumer.completeSubscribe();
      long joinDeadline = System.nanoTime() + 60_000_000_000L;
      while (consumer.getCurConsumedPartitions().size() < PARTITIONS) {
        if (System.nanoTime() > joinDeadline) {
          throw new IllegalStateException("the consumer never held every partition");
        }
        ConsumerResult idle = consumer.getMessage();
        if (idle.isSuccess()) {
          consumer.confirmConsume(idle.getConfirmContext(), true);
        }
        Thread.sleep(5);
      }
      List<byte[]> bodies = payloads(size);
      long periodNanos = (long) (1e9 / rate);
      AtomicLong failed = new AtomicLong();
      AtomicReference<String> reason = new AtomicReference<>();
      Semaphore window = new Semaphore(IN_FLIGHT);
      MessageSentCallback callback = windowed(window, failed, reason);
      Thread sender =
          new Thread(
              () -> {
                long start = System.nanoTime();
                try {
                  for (long i = 0; i < count; i++) {
                    long wait = start + i * periodNanos - System.nanoTime();
                    if (wait > 0) {
                      // The pacing every driver shares (bench/py_worker.py): at least a
                      // tick, then every message due is sent.
                      wait = Math.max(wait, SENDER_TICK_MS * 1_000_000L);
                      Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    }
                    byte[] body = bodies.get((int) (i & 15)).clone();
                    ByteBuffer.wrap(body)
                        .order(ByteOrder.LITTLE_ENDIAN)
                        .putLong(0, System.nanoTime());
                    window.acquire();
                    producer.sendMessage(new Message(topic, body), callback);
                  }
                } catch (Throwable error) {
                  failed.incrementAndGet();
                  reason.compareAndSet(null, String.valueOf(error));
                }
              },
              "bench-sender");
      double[] latencies = new double[(int) count];
      int seen = 0;
      int settled = 0;
      double first = 0;
      long bytes = 0;
      double cpuBefore = cpuSeconds();
      long started = System.nanoTime();
      long settledFrom = started + LATENCY_SETTLE_NANOS;
      sender.start();
      long giveUp = started + (long) ((seconds + 30) * 1e9);
      while (seen < count && System.nanoTime() < giveUp) {
        ConsumerResult batch = consumer.getMessage();
        if (!batch.isSuccess()) {
          continue;
        }
        for (Message message : batch.getMessageList()) {
          long now = System.nanoTime();
          byte[] data = message.getData();
          long sent = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
          if (seen == 0) {
            first = (now - sent) / 1e6;
          }
          if (seen < count) {
            seen++;
            if (sent >= settledFrom) {
              latencies[settled++] = (now - sent) / 1e6;
            }
          }
          bytes += data.length;
        }
        consumer.confirmConsume(batch.getConfirmContext(), true);
      }
      sender.join();
      window.acquire(IN_FLIGHT); // every reply is in
      double elapsed = (System.nanoTime() - started) / 1e9;
      double cpu = cpuSeconds() - cpuBefore;
      if (failed.get() != 0) {
        throw new IllegalStateException(failed.get() + " sends failed, first: " + reason.get());
      }
      if (settled == 0) {
        throw new IllegalStateException("no message arrived after the first second");
      }
      double[] sorted = Arrays.copyOf(latencies, settled);
      Arrays.sort(sorted);
      String head = result(seen, bytes, elapsed, cpu);
      return String.format(
          "%s, \"latency_ms\": {\"p50\": %.4f, \"p95\": %.4f, \"p99\": %.4f, \"p999\": %.4f, "
              + "\"max\": %.4f, \"first\": %.4f}}",
          head.substring(0, head.length() - 1),
          at(sorted, 0.5), at(sorted, 0.95), at(sorted, 0.99), at(sorted, 0.999),
          sorted[sorted.length - 1], first);
    } finally {
      consumer.shutdown();
    }
  }

  private static double at(double[] sorted, double quantile) {
    return sorted[Math.min(sorted.length - 1, (int) (quantile * sorted.length))];
  }
}
