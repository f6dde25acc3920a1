// An independent peer for interoperability tests: the official Java TubeMQ client
// consumes a topic from its first offset and prints what it received, one message a
// line: topic, partition key, flag, msgType, msgTime, attribute, body as hex, separated
// by tabs. It stops once `expected` lines whose body contains `marker` have been printed,
// or when `seconds` have passed (exit status 2).
//
//   java -cp <client jars>:. ReferenceConsumer <master> <topic> <group> <marker> <expected> <seconds>

import java.nio.charset.StandardCharsets;
import org.apache.inlong.tubemq.client.config.ConsumerConfig;
import org.apache.inlong.tubemq.client.consumer.ConsumePosition;
import org.apache.inlong.tubemq.client.consumer.ConsumerResult;
import org.apache.inlong.tubemq.client.consumer.PullMessageConsumer;
import org.apache.inlong.tubemq.client.factory.TubeSingleSessionFactory;
import org.apache.inlong.tubemq.corebase.Message;

public final class ReferenceConsumer {
  private static String hex(byte[] bytes) {
    StringBuilder out = new StringBuilder();
    for (byte b : bytes) {
      out.append(String.format("%02x", b & 0xff));
    }
    return out.toString();
  }

  private static String orDash(String text) {
    return text == null || text.isEmpty() ? "-" : text;
  }

  public static void main(String[] args) throws Throwable {
    String master = args[0];
    String topic = args[1];
    String group = args[2];
    byte[] marker = args[3].getBytes(StandardCharsets.UTF_8);
    int expected = Integer.parseInt(args[4]);
    long deadline = System.currentTimeMillis() + Long.parseLong(args[5]) * 1000L;

    ConsumerConfig config = new ConsumerConfig(master, group);
    config.setConsumePosition(ConsumePosition.CONSUMER_FROM_FIRST_OFFSET);
    config.setHeartbeatPeriodMs(1000);
    TubeSingleSessionFactory factory = new TubeSingleSessionFactory(config);
    PullMessageConsumer consumer = factory.createPullConsumer(config);
    consumer.subscribe(topic, null);
    consumer.completeSubscribe();
    int seen = 0;
    try {
      while (seen < expected && System.currentTimeMillis() < deadline) {
        ConsumerResult result = consumer.getMessage();
        if (!result.isSuccess()) {
          Thread.sleep(100);
          continue;
        }
        for (Message message : result.getMessageList()) {
          String body = new String(message.getData(), StandardCharsets.ISO_8859_1);
          if (!body.contains(new String(marker, StandardCharsets.ISO_8859_1))) {
            continue;
          }
          seen++;
          System.out.println(String.join("\t", message.getTopic(), result.getPartitionKey(),
              Integer.toString(message.getFlag()), orDash(message.getMsgType()),
              orDash(message.getMsgTime()), orDash(message.getAttribute()),
              hex(message.getData())));
        }
        consumer.confirmConsume(result.getConfirmContext(), true);
      }
    } finally {
      System.out.flush();
      consumer.shutdown();
      factory.shutdown();
    }
    System.exit(seen >= expected ? 0 : 2);
  }
}
