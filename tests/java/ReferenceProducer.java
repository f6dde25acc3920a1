// An independent peer for interoperability tests: the official Java TubeMQ client sends
// `count` messages "<marker>-<i>" to a topic, the even ones with msgType "A", msgTime
// "202501011230" and the attribute k=v<i>, the odd ones with no attribute at all. It
// prints each message id, one a line, as "id<TAB><marker>-<i>".
//
//   java -cp <client jars>:. ReferenceProducer <master> <topic> <marker> <count>

import java.nio.charset.StandardCharsets;
import org.apache.inlong.tubemq.client.config.TubeClientConfig;
import org.apache.inlong.tubemq.client.factory.TubeSingleSessionFactory;
import org.apache.inlong.tubemq.client.producer.MessageProducer;
import org.apache.inlong.tubemq.client.producer.MessageSentResult;
import org.apache.inlong.tubemq.corebase.Message;

public final class ReferenceProducer {
  public static void main(String[] args) throws Throwable {
    String master = args[0];
    String topic = args[1];
    String marker = args[2];
    int count = Integer.parseInt(args[3]);
    TubeClientConfig config = new TubeClientConfig(master);
    TubeSingleSessionFactory factory = new TubeSingleSessionFactory(config);
    MessageProducer producer = factory.createProducer();
    producer.publish(topic);
    try {
      for (int i = 0; i < count; i++) {
        String body = marker + "-" + i;
        Message message = new Message(topic, body.getBytes(StandardCharsets.UTF_8));
        if (i % 2 == 0) {
          message.putSystemHeader("A", "202501011230");
          message.setAttrKeyVal("k", "v" + i);
        }
        MessageSentResult result = producer.sendMessage(message);
        if (!result.isSuccess()) {
          System.err.println("send failed: " + result.getErrCode() + " " + result.getErrMsg());
          System.exit(2);
        }
        System.out.println(result.getMessageId() + "\t" + body);
      }
    } finally {
      System.out.flush();
      producer.shutdown();
      factory.shutdown();
    }
  }
}
