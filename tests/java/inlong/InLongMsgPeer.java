// InLong's own InLongMsg class (inlong-common) as the test oracle for tubemq.inlong:
//   build DIR   writes packs of every version, stored and compressed, made by InLongMsg
//   decode F... prints, per pack, what InLongMsg reads from it (one JSON object per line)
// The inputs of "build" are fixed here and repeated in tests/unit/test_inlong_java.py.
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import org.apache.inlong.common.msg.InLongMsg;

public final class InLongMsgPeer {
  static final long CREATE_TIME = 1700000000000L;
  static final String ATTR_A = "m=0&iname=demo&t=2023111422&note=caf\u00e9\ud83d\ude00";
  static final String ATTR_B = "m=0&iname=other&t=2023111423";

  static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  // Record bodies: text, binary with zero bytes, and a long repetitive one that Snappy
  // really compresses (copies, not only literals).
  static List<byte[]> bodies() {
    List<byte[]> out = new ArrayList<>();
    out.add(utf8("hello"));
    out.add(new byte[] {0, 1, 2, (byte) 0xFF, 0, 0x0F, 0x01});
    StringBuilder big = new StringBuilder();
    for (int i = 0; i < 500; i++) big.append("row-").append(i % 7).append(';');
    out.add(utf8(big.toString()));
    out.add(new byte[0]);
    return out;
  }

  static byte[] pairs(List<byte[]> bodies, boolean skipEmpty) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    int seq = 0;
    for (byte[] body : bodies) {
      if (skipEmpty && body.length == 0) continue;
      byte[] attr = utf8("seq=" + (++seq));
      out.writeInt(body.length);
      out.write(body);
      out.writeInt(attr.length);
      out.write(attr);
    }
    return bytes.toByteArray();
  }

  // A v4 binary message (totalLen .. EE 01), written here by hand.
  static byte[] binary(boolean privateAttrs, boolean numericIds) throws IOException {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    DataOutputStream b = new DataOutputStream(body);
    int count = 0;
    if (privateAttrs) {
      b.write(pairs(bodies(), true));
      count = 3;
    } else {
      for (byte[] item : bodies()) {
        b.writeInt(item.length);
        b.write(item);
        count++;
      }
    }
    byte[] attr = utf8(numericIds ? "rtms=1700000000123" : "groupId=g1&streamId=s1&rtms=1700000000123");
    byte[] bodyBytes = body.toByteArray();
    ByteArrayOutputStream all = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(all);
    out.writeInt(25 + bodyBytes.length + attr.length);
    out.writeByte(7);
    out.writeShort(numericIds ? 7 : 0);
    out.writeShort(numericIds ? 9 : 0);
    out.writeShort((privateAttrs ? 0x0001 : 0) | (numericIds ? 0 : 0x0004));
    out.writeInt((int) (CREATE_TIME / 1000));
    out.writeShort(count);
    out.writeInt(1);
    out.writeInt(bodyBytes.length);
    out.write(bodyBytes);
    out.writeShort(attr.length);
    out.write(attr);
    out.writeShort(0xEE01);
    return all.toByteArray();
  }

  static void build(Path dir) throws IOException {
    Files.createDirectories(dir);
    for (boolean compress : new boolean[] {false, true}) {
      String suffix = compress ? "c" : "p";
      for (int version = 1; version <= 2; version++) {
        InLongMsg pack = InLongMsg.newInLongMsg(1 << 20, compress, version);
        List<byte[]> bodies = bodies();
        for (int i = 0; i < bodies.size(); i++) {
          pack.addMsg(i % 2 == 0 ? ATTR_A : ATTR_B, bodies.get(i));
        }
        Files.write(dir.resolve("v" + version + suffix + ".bin"), pack.buildArray(CREATE_TIME));
      }
      InLongMsg v3 = InLongMsg.newInLongMsg(1 << 20, compress, 3);
      v3.addMsg(ATTR_A, pairs(bodies(), true));
      v3.addMsg(ATTR_B, pairs(bodies().subList(0, 1), true));
      Files.write(dir.resolve("v3" + suffix + ".bin"), v3.buildArray(CREATE_TIME));
      int index = 0;
      for (boolean privateAttrs : new boolean[] {false, true}) {
        for (boolean numericIds : new boolean[] {false, true}) {
          InLongMsg v4 = InLongMsg.newInLongMsg(1 << 20, compress, 4);
          if (!v4.addMsg(binary(privateAttrs, numericIds))) throw new IllegalStateException("v4");
          Files.write(dir.resolve("v4" + suffix + (index++) + ".bin"), v4.buildArray(CREATE_TIME));
        }
      }
    }
  }

  static String hex(byte[] bytes) {
    StringBuilder out = new StringBuilder();
    for (byte b : bytes) out.append(String.format("%02x", b & 0xFF));
    return out.toString();
  }

  static String quote(String text) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : text.toCharArray()) {
      if (c == '"' || c == '\\') out.append('\\').append(c);
      else if (c < 0x20 || c > 0x7E) out.append(String.format("\\u%04x", (int) c));
      else out.append(c);
    }
    return out.append('"').toString();
  }

  static void decode(String[] files) throws IOException {
    for (String file : files) {
      byte[] bytes = Files.readAllBytes(Paths.get(file));
      InLongMsg pack = InLongMsg.parseFrom(bytes);
      if (pack == null) {
        System.out.println("{\"file\":" + quote(file) + ",\"error\":\"not InLongMsg\"}");
        continue;
      }
      StringBuilder line = new StringBuilder("{\"file\":" + quote(file));
      // 1.5.0 has no getVersion(): the pack's second byte is its version.
      line.append(",\"version\":").append(bytes.length > 1 ? bytes[1] : -1);
      line.append(",\"msg_count\":").append(pack.getMsgCnt());
      line.append(",\"create_time\":").append(pack.getCreatetime());
      line.append(",\"groups\":[");
      Set<String> attrs = pack.getAttrs();
      boolean first = true;
      for (String attr : attrs) {
        if (!first) line.append(',');
        first = false;
        line.append("{\"attr\":").append(quote(attr)).append(",\"bodies\":[");
        Iterator<byte[]> it = pack.getIterator(attr);
        boolean firstBody = true;
        while (it != null && it.hasNext()) {
          if (!firstBody) line.append(',');
          firstBody = false;
          line.append('"').append(hex(it.next())).append('"');
        }
        line.append("]}");
      }
      System.out.println(line.append("]}"));
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length >= 2 && args[0].equals("build")) {
      build(Paths.get(args[1]));
    } else if (args.length >= 2 && args[0].equals("decode")) {
      decode(java.util.Arrays.copyOfRange(args, 1, args.length));
    } else {
      System.err.println("usage: InLongMsgPeer build DIR | decode FILE...");
      System.exit(2);
    }
  }
}
