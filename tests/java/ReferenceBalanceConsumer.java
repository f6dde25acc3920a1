// An independent peer for the client-balanced consumer: the official Java client joins
// a client-balanced group as node `nodeId` of `sourceCount`, takes its share of the
// partitions by the upstream example's rule (unsigned Java string hash of the key
// modulo sourceCount), reads them from their first offset, and prints "HELD <key>" for
// each partition taken and "ID <messageId>" for each message whose body contains
// `marker`. It stops after `seconds` (exit 0) or when start fails (exit 3).
//
//   java -cp <client jars>:. ReferenceBalanceConsumer <master> <topic> <group> <marker>
//        <sourceCount> <nodeId> <seconds>

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.inlong.tubemq.client.common.ConfirmResult;
import org.apache.inlong.tubemq.client.common.ConsumeResult;
import org.apache.inlong.tubemq.client.common.QueryMetaResult;
import org.apache.inlong.tubemq.client.config.ConsumerConfig;
import org.apache.inlong.tubemq.client.consumer.ClientBalanceConsumer;
import org.apache.inlong.tubemq.client.consumer.ConsumePosition;
import org.apache.inlong.tubemq.client.factory.TubeSingleSessionFactory;
import org.apache.inlong.tubemq.corebase.Message;
import org.apache.inlong.tubemq.corebase.rv.ProcessResult;

public final class ReferenceBalanceConsumer {
  public static void main(String[] args) throws Throwable {
    String master = args[0];
    String topic = args[1];
    String group = args[2];
    String marker = args[3];
    int sourceCount = Integer.parseInt(args[4]);
    int nodeId = Integer.parseInt(args[5]);
    long deadline = System.currentTimeMillis() + Long.parseLong(args[6]) * 1000L;

    ConsumerConfig config = new ConsumerConfig(master, group);
    config.setConsumePosition(ConsumePosition.CONSUMER_FROM_FIRST_OFFSET);
    config.setHeartbeatPeriodMs(1000);
    TubeSingleSessionFactory factory = new TubeSingleSessionFactory(config);
    ClientBalanceConsumer consumer = factory.createBalanceConsumer(config);
    try {
      Map<String, TreeSet<String>> topics = new TreeMap<>();
      topics.put(topic, null);
      ProcessResult started = new ProcessResult();
      if (!consumer.start(topics, sourceCount, nodeId, started)) {
        System.out.println("START_FAILED " + started.getErrCode() + " " + started.getErrMsg());
        System.exit(3);
      }
      QueryMetaResult meta = new QueryMetaResult();
      if (!consumer.getPartitionMetaInfo(meta)) {
        System.out.println("META_FAILED " + meta.getErrCode() + " " + meta.getErrMsg());
        System.exit(3);
      }
      for (Map.Entry<String, Boolean> entry : meta.getPartStatusMap().entrySet()) {
        String key = entry.getKey();
        if (!entry.getValue() || (((long) key.hashCode()) & 0xffffffffL) % sourceCount != nodeId) {
          continue;
        }
        ProcessResult connected = new ProcessResult();
        if (consumer.connect2Partition(key, -1L, connected)) {
          System.out.println("HELD " + key);
        } else {
          System.out.println("CONNECT_FAILED " + key + " " + connected.getErrCode());
        }
      }
      System.out.flush();
      while (System.currentTimeMillis() < deadline) {
        ConsumeResult result = new ConsumeResult();
        if (!consumer.getMessage(result)) {
          Thread.sleep(50);
          continue;
        }
        for (Message message : result.getMessageList()) {
          if (new String(message.getData(), StandardCharsets.UTF_8).startsWith(marker)) {
            System.out.println("ID " + message.getIndexId());
          }
        }
        System.out.flush();
        consumer.confirmConsume(result.getConfirmContext(), true, new ConfirmResult());
      }
    } finally {
      System.out.flush();
      consumer.shutdown();
      factory.shutdown();
    }
    System.exit(0);
  }
}
