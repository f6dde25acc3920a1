// JavaBench: the official Java client (org.apache.inlong:tubemq-client, from the server's
// lib/ directory) driven through the same workloads as bench/cpp/native_bench.cc, for
// python -m bench. The server jar's CliProducer/CliConsumer time their whole run,
// start-up and group join included, and CliConsumer checks its count only every
// 5 s, so their figures cannot be set beside a timed section; this program times the
// same section as our drivers and prints one JSON line.
//
//   java -cp <server classpath>:<dir> JavaBench --master H:P --topic T --mode MODE
//        --size BYTES --count N [--group G] [--rate MSG_PER_S] [--not-found-wait-ms MS]
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.inlong.tubemq.client.config.ConsumerConfig;
import org.apache.inlong.tubemq.client.config.TubeClientConfig;
import org.apache.inlong.tubemq.client.consumer.ConsumePosition;
import org.apache.inlong.tubemq.client.consumer.ConsumerResult;
import org.apache.inlong.tubemq.client.consumer.PullMessageConsumer;
import org.apache.inlong.tubemq.client.factory.MessageSessionFactory;
import org.apache.inlong.tubemq.client.factory.TubeSingleSessionFactory;
import org.apache.inlong.tubemq.client.producer.MessageProducer;
import org.apache.inlong.tubemq.client.producer.MessageSentCallback;
import org.apache.inlong.tubemq.client.producer.MessageSentResult;
import org.apache.inlong.tubemq.corebase.Message;

public final class JavaBench {
  private static final int IN_FLIGHT = 20000;  // as our drivers' window
  private static final int PARTITIONS = 4;  // of every bench topic (bench/runner.py)

  public static void main(String[] argv) throws Throwable {
    Map<String, String> args = new HashMap<>();
    for (int i = 0; i + 1 < argv.length; i += 2) {
      args.put(argv[i], argv[i + 1]);
    }
    String master = args.get("--master");
    String topic = args.get("--topic");
    String mode = args.get("--mode");
    int size = Integer.parseInt(args.getOrDefault("--size", "1024"));
    long count = Long.parseLong(args.getOrDefault("--count", "10000"));
    String group = args.getOrDefault("--group", "bench_java");
    long notFoundWait = Long.parseLong(args.getOrDefault("--not-found-wait-ms", "400"));
    double rate = Double.parseDouble(args.getOrDefault("--rate", "1000"));

    TubeClientConfig config = new TubeClientConfig(master);
    MessageSessionFactory factory = new TubeSingleSessionFactory(config);
    double[] result;
    try {
      switch (mode) {
        case "produce-sync":
          result = produce(factory, topic, size, count, false);
          break;
        case "produce-async":
          result = produce(factory, topic, size, count, true);
          break;
        case "consume":
          result = consume(master, factory, topic, group, count, notFoundWait);
          break;
        case "latency":
          result = latency(master, factory, topic, group, size, count, rate, notFoundWait);
          break;
        default:
          throw new IllegalArgumentException("unknown mode " + mode);
      }
    } finally {
      factory.shutdown();
    }
    String latency =
        result.length < 8
            ? "null"
            : String.format(
                "{\"p50\": %.4f, \"p95\": %.4f, \"p99\": %.4f, \"max\": %.4f}",
                result[4], result[5], result[6], result[7]);
    System.out.printf(
        "{\"client\": \"java\", \"mode\": \"%s\", \"count\": %d, \"bytes\": %d, "
            + "\"elapsed_s\": %.6f, \"cpu_s\": %.6f, \"latency_ms\": %s}%n",
        mode, (long) result[0], (long) result[1], result[2], result[3], latency);
    System.out.flush();
    // The client library leaves non-daemon threads behind after shutdown.
    System.exit(0);
  }

  private static double cpuSeconds() {
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    return os.getProcessCpuTime() / 1e9;
  }

  // Counts failed sends and gives each reply's place in the in-flight window back.
  private static MessageSentCallback windowed(Semaphore window, AtomicLong failed) {
    return new MessageSentCallback() {
      @Override
      public void onMessageSent(MessageSentResult result) {
        if (!result.isSuccess()) {
          failed.incrementAndGet();
        }
        window.release();
      }

      @Override
      public void onException(Throwable error) {
        failed.incrementAndGet();
        window.release();
      }
    };
  }

  // A pull consumer of `group` on `topic`, set up as our drivers' consumers are.
  private static PullMessageConsumer subscribed(
      String master,
      MessageSessionFactory factory,
      String topic,
      String group,
      ConsumePosition position,
      long notFoundWait)
      throws Throwable {
    ConsumerConfig config = new ConsumerConfig(master, group);
    config.setConsumePosition(position);
    config.setMsgNotFoundWaitPeriodMs(notFoundWait);
    config.setHeartbeatPeriodMs(1000);
    PullMessageConsumer consumer = factory.createPullConsumer(config);
    consumer.subscribe(topic, null);
    consumer.completeSubscribe();
    return consumer;
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

  private static double[] produce(
      MessageSessionFactory factory, String topic, int size, long count, boolean async)
      throws Throwable {
    List<byte[]> bodies = payloads(size);
    MessageProducer producer = factory.createProducer();
    producer.publish(topic);
    // One send before the clock, as our drivers connect to the broker before timing.
    producer.sendMessage(new Message(topic, bodies.get(0)));
    Semaphore window = new Semaphore(IN_FLIGHT);
    AtomicLong failed = new AtomicLong();
    MessageSentCallback callback = windowed(window, failed);
    double cpuBefore = cpuSeconds();
    long started = System.nanoTime();
    for (long i = 0; i < count; i++) {
      Message message = new Message(topic, bodies.get((int) (i % bodies.size())));
      if (async) {
        window.acquire();
        producer.sendMessage(message, callback);
      } else if (!producer.sendMessage(message).isSuccess()) {
        failed.incrementAndGet();
      }
    }
    if (async) {
      window.acquire(IN_FLIGHT);  // every reply is in
    }
    double elapsed = (System.nanoTime() - started) / 1e9;
    double cpu = cpuSeconds() - cpuBefore;
    if (failed.get() != 0) {
      throw new IllegalStateException(failed.get() + " sends failed");
    }
    producer.shutdown();
    return new double[] {count, count * (double) size, elapsed, cpu};
  }

  private static double[] consume(
      String master,
      MessageSessionFactory factory,
      String topic,
      String group,
      long count,
      long notFoundWait)
      throws Throwable {
    PullMessageConsumer consumer =
        subscribed(master, factory, topic, group, ConsumePosition.CONSUMER_FROM_FIRST_OFFSET,
            notFoundWait);
    // Joining the group and the first batch are outside the measure, as for ours.
    ConsumerResult batch = null;
    long joinDeadline = System.nanoTime() + 120_000_000_000L;
    while (batch == null) {
      if (System.nanoTime() > joinDeadline) {
        throw new IllegalStateException("no partition within 120 s");
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
    long received = 0;
    long bytes = 0;
    long checksum = 0;
    long giveUp = 0;
    while (true) {
      if (batch != null) {
        for (Message message : batch.getMessageList()) {
          if (received == count) {
            break;
          }
          byte[] data = message.getData();
          checksum += data.length == 0 ? 0 : data[0];
          bytes += data.length;
          received++;
        }
        consumer.confirmConsume(batch.getConfirmContext(), true);
        giveUp = System.nanoTime() + 5_000_000_000L;
      }
      if (received >= count) {
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
    consumer.shutdown();
    return new double[] {received, bytes, elapsed, cpu};
  }

  // Produce to consume in one process, as bench/py_worker.py does: a sender thread sends
  // at `rate` with its System.nanoTime() in the first 8 bytes (little-endian), and the
  // consumer, which holds every partition before the first send, measures the delay.
  private static double[] latency(
      String master,
      MessageSessionFactory factory,
      String topic,
      String group,
      int size,
      long count,
      double rate,
      long notFoundWait)
      throws Throwable {
    PullMessageConsumer consumer =
        subscribed(master, factory, topic, group, ConsumePosition.CONSUMER_FROM_LATEST_OFFSET,
            notFoundWait);
    MessageProducer producer = factory.createProducer();
    producer.publish(topic);
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
    Semaphore window = new Semaphore(IN_FLIGHT);
    MessageSentCallback callback = windowed(window, failed);
    Thread sender =
        new Thread(
            () -> {
              long start = System.nanoTime();
              try {
                for (long i = 0; i < count; i++) {
                  long wait = start + i * periodNanos - System.nanoTime();
                  if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                  }
                  byte[] body = bodies.get((int) (i & 15)).clone();
                  ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN).putLong(0, System.nanoTime());
                  window.acquire();
                  producer.sendMessage(new Message(topic, body), callback);
                }
              } catch (Throwable error) {
                failed.incrementAndGet();
              }
            },
            "bench-sender");
    double[] latencies = new double[(int) count];
    int seen = 0;
    long bytes = 0;
    double cpuBefore = cpuSeconds();
    long started = System.nanoTime();
    sender.start();
    long giveUp = started + (long) (count / rate * 1e9) + 30_000_000_000L;
    while (seen < count && System.nanoTime() < giveUp) {
      ConsumerResult batch = consumer.getMessage();
      if (!batch.isSuccess()) {
        continue;
      }
      for (Message message : batch.getMessageList()) {
        long now = System.nanoTime();
        byte[] data = message.getData();
        long sent = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        if (seen < count) {
          latencies[seen++] = (now - sent) / 1e6;
        }
        bytes += data.length;
      }
      consumer.confirmConsume(batch.getConfirmContext(), true);
    }
    sender.join();
    double elapsed = (System.nanoTime() - started) / 1e9;
    double cpu = cpuSeconds() - cpuBefore;
    if (failed.get() != 0) {
      throw new IllegalStateException(failed.get() + " sends failed");
    }
    if (seen == 0) {
      throw new IllegalStateException("no message arrived");
    }
    double[] sorted = Arrays.copyOf(latencies, seen);
    Arrays.sort(sorted);
    producer.shutdown();
    consumer.shutdown();
    return new double[] {
      seen, bytes, elapsed, cpu,
      at(sorted, 0.5), at(sorted, 0.95), at(sorted, 0.99), sorted[sorted.length - 1]
    };
  }

  private static double at(double[] sorted, double quantile) {
    return sorted[Math.min(sorted.length - 1, (int) (quantile * sorted.length))];
  }

  private JavaBench() {}
}
