package org.gradwire;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class GradwireTest {
    static final Path VECTORS = Path.of(System.getProperty("gradwire.vectors", "../../tests/vectors"));

    static byte[] unhex(Path p) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (String line : Files.readAllLines(p)) {
            if (!line.startsWith("#")) sb.append(line.replaceAll("[^0-9a-fA-F]", ""));
        }
        byte[] out = new byte[sb.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(sb.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    static float[] floats(byte[] b) {
        float[] f = new float[b.length / 4];
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(f);
        return f;
    }

    @Test
    void codecsComeFromTheLibrary() {
        int[] list = Gradwire.codecList();
        assertTrue(list.length >= 11);
        for (int id : list) {
            String name = Gradwire.codecName(Codec.swigToEnum(id));
            assertEquals(Codec.swigToEnum(id), Gradwire.codecFromName(name));
        }
        assertEquals("topk", Gradwire.codecName(Codec.TOPK));
    }

    @Test
    void specParametersAndErrors() {
        try (CodecSpec s = new CodecSpec(Codec.TOPK)) {
            s.set(Param.K, 7);
            assertEquals(7, s.get(Param.K));
            GradwireException e = assertThrows(GradwireException.class, () -> s.set(Param.BLOCK_SIZE, 3));
            assertEquals("GW_ERR_INVALID_ARGUMENT", e.getStatusName());
            assertEquals(Status.ERR_INVALID_ARGUMENT, e.getStatusEnum());
        }
        assertThrows(GradwireException.class, () -> Gradwire.codecFromName("nope"));
    }

    static Stream<Path> goldenFrames() throws IOException {
        return Files.list(VECTORS).filter(p -> p.toString().endsWith(".frame.hex")).sorted();
    }

    @ParameterizedTest
    @MethodSource("goldenFrames")
    void goldenVectorsDecodeAndReencode(Path frameFile) throws IOException {
        byte[] frame = unhex(frameFile);
        float[] expect = floats(unhex(Path.of(frameFile.toString().replace(".frame.", ".decoded."))));
        float[] out = new float[expect.length];
        assertEquals(expect.length, Gradwire.decodeInto(frame, out));
        assertArrayEquals(expect, out);
        FrameInfo info = Gradwire.frameInspect(frame);
        assertEquals(frame.length, info.getFrameSize());
        if (info.getFormatVersion() == 2) {
            float[] x = floats(unhex(Path.of(frameFile.toString().replace(".frame.", ".input."))));
            EncodeContext ctx = new EncodeContext();
            ctx.setTag(info.getTag());
            try (CodecSpec spec = CodecSpec.fromFrame(frame)) {
                assertArrayEquals(frame, Gradwire.encode(spec, ctx, x, DType.FLOAT32));
            }
        }
    }

    @Test
    void buffersArraysAndDirectNio() {
        float[] x = new float[64];
        for (int i = 0; i < x.length; i++) x[i] = (i - 32) * 0.25f;
        EncodeContext ctx = new EncodeContext();
        try (CodecSpec spec = new CodecSpec(Codec.FP16)) {
            byte[] a = Gradwire.encode(spec, ctx, x, DType.FLOAT32);
            FloatBuffer fb = ByteBuffer.allocateDirect(4 * 64).order(ByteOrder.nativeOrder()).asFloatBuffer();
            fb.put(x).flip();
            assertArrayEquals(a, Gradwire.encode(spec, ctx, fb, DType.FLOAT32));
            ByteBuffer bb = ByteBuffer.allocateDirect(4 * 64).order(ByteOrder.nativeOrder());
            bb.asFloatBuffer().put(x);
            assertArrayEquals(a, Gradwire.encode(spec, ctx, bb, DType.FLOAT32));
            ByteBuffer out = ByteBuffer.allocateDirect(1000);
            long n = Gradwire.encodeInto(spec, ctx, x, DType.FLOAT32, out);
            byte[] got = new byte[(int) n];
            out.get(got);
            assertArrayEquals(a, got);
            // half-precision input as 16-bit bits; decoding writes a float[] in place
            short[] half = new short[64];
            FloatBuffer dec = ByteBuffer.allocateDirect(4 * 64).order(ByteOrder.nativeOrder()).asFloatBuffer();
            Gradwire.decodeInto(a, dec);
            float[] back = new float[64];
            Gradwire.decodeInto(a, back);
            assertEquals(back[10], dec.get(10));
            assertEquals(64, Gradwire.frameInspect(Gradwire.encode(spec, ctx, half, DType.FLOAT16)).getCount());
            // wrong element type, heap buffer, wrong order, wrong length
            GradwireException e = assertThrows(GradwireException.class,
                    () -> Gradwire.encode(spec, ctx, new double[4], DType.FLOAT32));
            assertEquals("GW_ERR_INVALID_ARGUMENT", e.getStatusName());
            assertThrows(IllegalArgumentException.class,
                    () -> Gradwire.encode(spec, ctx, ByteBuffer.allocate(16), DType.FLOAT32));
            assertThrows(IllegalArgumentException.class, () -> Gradwire.encode(spec, ctx,
                    ByteBuffer.allocateDirect(16).order(ByteOrder.BIG_ENDIAN).asFloatBuffer(), DType.FLOAT32));
            assertThrows(IllegalArgumentException.class, () -> Gradwire.encode(spec, ctx, "x", DType.FLOAT32));
            assertThrows(GradwireException.class, () -> Gradwire.decodeInto(a, new float[63]));
        }
    }

    @Test
    void corruptedFramesRaiseSpecificErrors() {
        try (CodecSpec spec = new CodecSpec(Codec.SCALED_SIGN)) {
            byte[] f = Gradwire.encode(spec, new EncodeContext(), new float[100], DType.FLOAT32);
            f[f.length - 1] ^= 1;
            GradwireException e = assertThrows(GradwireException.class, () -> Gradwire.decodeInto(f, new float[100]));
            assertEquals("GW_ERR_FRAME_CHECKSUM", e.getStatusName());
            assertTrue(e.getMessage().contains("gw_frame_inspect") || e.getMessage().contains("gw_decode"));
        }
    }

    @Test
    void workerKeepsWhatItDidNotSend() {
        Random r = new Random(1);
        float[] g = new float[1000];
        for (int i = 0; i < g.length; i++) g[i] = (float) r.nextGaussian();
        try (CodecSpec spec = new CodecSpec(Codec.TOPK)) {
            spec.set(Param.K, 10);
            try (Worker w = new Worker(1000, spec, Momentum.NONE, 0f)) {
                float[] sent = new float[1000], kept = new float[1000];
                Gradwire.decodeInto(w.step(g, DType.FLOAT32, 1f), sent);
                w.residual(kept);
                for (int i = 0; i < g.length; i++) assertEquals(g[i], sent[i] + kept[i], 1e-6);
            }
        }
    }

    @Test
    void asylpgMasterAndWorkerEpoch() {
        int d = 16;
        float[] x0 = new float[d], g = new float[d], gm = new float[d], gs = new float[d];
        for (int i = 0; i < d; i++) {
            x0[i] = 0.1f * i;
            g[i] = 0.01f * (i - 8);
            gm[i] = 0.5f - 0.03f * i;
        }
        try (AsylpgMaster m = new AsylpgMaster(x0, AsylpgVariant.ACC, 0.1f, 0f, 0f, 4, 1, 1f, 2, 8);
             CodecSpec q = new CodecSpec(Codec.QUANT)) {
            q.set(Param.BITS, 4);
            try (AsylpgWorker w = new AsylpgWorker(d, q, 0, 7)) {
                float[] snap = new float[d];
                m.snapshot(snap);
                m.beginEpoch(g);
                w.setSnapshot(snap);
                byte[] blob = null;
                for (int t = 0; t < 4; t++) {
                    w.receive(m.model());
                    float[] model = new float[d];
                    assertEquals(t, w.model(model));
                    if (t == 2) blob = m.save();
                    m.push(w.step(gm, gs, DType.FLOAT32));
                }
                long[] p = m.progress();  // epoch, inner, version, running
                assertArrayEquals(new long[] {2, 0, 4, 0}, p);
                GradwireException e = assertThrows(GradwireException.class, () -> m.push(new byte[0]));
                assertNotNull(e.getMessage());
                m.load(blob);
                assertArrayEquals(new long[] {1, 2, 2, 1}, m.progress());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
    void twoWayRoundsAndCheckpoints(int m) {
        int n = 257;
        Random r = new Random(m);
        try (CodecSpec spec = new CodecSpec(Codec.SCALED_SIGN)) {
            List<Worker> ws = new ArrayList<>();
            for (int i = 0; i < m; i++) ws.add(new Worker(n, spec));
            Server s = new Server(n, m, spec, spec);
            float[] x = new float[n];
            for (int step = 0; step < 3; step++) {
                for (Worker w : ws) {
                    float[] g = new float[n];
                    for (int i = 0; i < n; i++) g[i] = (float) r.nextGaussian();
                    s.push(w.step(g, DType.FLOAT32, 0.1f));
                }
                Gradwire.decodeAccumulate(s.step(0.1f), -0.1f, x);
            }
            byte[] blob = s.save();
            try (Server s2 = new Server(n, m, spec, spec)) {
                s2.load(blob);
                assertArrayEquals(blob, s2.save());
                assertEquals(3, s2.stepCount());
            }
            assertThrows(GradwireException.class, () -> s.step(0.1f)); // no pushes yet: sequence
            s.close();
            assertThrows(IllegalStateException.class, () -> s.stepCount());
            for (Worker w : ws) w.close();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 16})
    void manyFramesAtOnce(int m) {
        int n = 20001;
        Random r = new Random(m);
        try (CodecSpec spec = new CodecSpec(Codec.SCALED_SIGN);
             Server a = new Server(n, m, spec, spec);
             Server b = new Server(n, m, spec, spec)) {
            Object[] frames = new Object[m];
            for (int i = 0; i < m; i++) {
                float[] g = new float[n];
                for (int k = 0; k < n; k++) g[k] = (float) r.nextGaussian();
                frames[i] = Gradwire.encode(spec, new EncodeContext(), g, DType.FLOAT32);
            }
            float[] one = new float[n], many = new float[n];
            for (Object f : frames) Gradwire.decodeAccumulate(f, 0.25f, one);
            Gradwire.decodeAccumulateMany(frames, 0.25f, many);
            assertArrayEquals(one, many);
            for (Object f : frames) a.push(f);
            assertArrayEquals(a.step(0.1f), b.round(frames, 0.1f));
            Object[] bad = frames.clone();
            bad[m - 1] = new byte[] {1, 2, 3};
            GradwireException e = assertThrows(GradwireException.class,
                                               () -> Gradwire.decodeAccumulateMany(bad, 1f, many));
            assertTrue(e.getMessage().contains("frames[" + (m - 1) + "]"), e.getMessage());
            assertArrayEquals(one, many);
        }
    }

    // tests/vectors/state: blobs of fixed histories (tests/python/test_core.py
    // state_scenarios()); replayed here, they must come out byte for byte.
    static float[] vectorInput(int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) ((i * 37 % 19) - 9) * 0.375f;
        x[3] = -0.0f;
        x[5] = 70000.0f;
        x[7] = 1.0f + (float) Math.pow(2, -11);
        return x;
    }

    static float[] scaled(float[] x, float a) {
        float[] y = new float[x.length];
        for (int i = 0; i < x.length; i++) y[i] = x[i] * a;
        return y;
    }

    @Test
    void checkpointsMatchTheSharedVectors() throws IOException {
        float[] x = vectorInput(20);
        Path dir = VECTORS.resolve("state");
        try (CodecSpec spec = new CodecSpec(Codec.SCALED_SIGN); CodecSpec topk = new CodecSpec(Codec.TOPK)) {
            Worker w = new Worker(20, spec, Momentum.NESTEROV, 0.9f, true, 3);
            for (int step = 0; step < 3; step++) w.step(scaled(x, step + 1), DType.FLOAT32, 0.1f);
            assertArrayEquals(unhex(dir.resolve("worker_scaled_sign_nesterov.state.hex")), w.save());

            Server s = new Server(20, 2, spec, spec, 0, 20, true, 3);
            Worker a = new Worker(20, spec, Momentum.NESTEROV, 0.9f, true, 3);
            Worker b = new Worker(20, spec, Momentum.NESTEROV, 0.9f, true, 3);
            for (int step = 0; step < 2; step++) {
                s.push(a.step(x, DType.FLOAT32, 0.1f));
                s.push(b.step(scaled(x, -0.5f), DType.FLOAT32, 0.1f));
                s.step(0.1f);
            }
            byte[] golden = unhex(dir.resolve("server_scaled_sign_m2.state.hex"));
            assertArrayEquals(golden, s.save());

            topk.set(Param.K, 4);
            topk.set(Param.ZSTD, 0);
            Worker t = new Worker(20, topk, Momentum.NONE, 0f, true, 1);
            t.step(x, DType.FLOAT32, 1.0f);
            assertArrayEquals(unhex(dir.resolve("worker_topk_k4.state.hex")), t.save());

            // ... and a blob saved by Python loads here and continues identically.
            Server s2 = new Server(20, 2, spec, spec, 0, 20, true, 3);
            s2.load(golden);
            byte[] f1 = a.step(x, DType.FLOAT32, 0.1f), f2 = b.step(x, DType.FLOAT32, 0.1f);
            s.push(f1);
            s.push(f2);
            s2.push(f1);
            s2.push(f2);
            assertArrayEquals(s.step(0.1f), s2.step(0.1f));
        }
    }

    @Test
    void cltkRoundOnThreeWorkers() {
        int m = 3, n = 1000;
        try (CodecSpec idx = new CodecSpec(Codec.INDEX)) {
            idx.set(Param.K, 20);
            idx.set(Param.CHUNK_SIZE, 100);
            Cltk[] hs = new Cltk[m];
            Random r = new Random(2);
            for (int i = 0; i < m; i++) {
                hs[i] = new Cltk(n, m, i, idx);
                float[] g = new float[n];
                for (int j = 0; j < n; j++) g[j] = (float) r.nextGaussian();
                hs[i].begin(g, DType.FLOAT32, 0.5f);
            }
            byte[] frame = hs[(int) hs[0].leader()].select();
            float[][] vals = new float[m][(int) hs[0].valuesBound()];
            for (int i = 0; i < m; i++) assertEquals(20, hs[i].extract(frame, vals[i]));
            float[] sum = new float[20];
            for (float[] v : vals) for (int j = 0; j < 20; j++) sum[j] += v[j];
            float[] x0 = new float[n], x1 = new float[n];
            hs[0].apply(sum, x0);
            hs[1].apply(sum, x1);
            assertArrayEquals(x0, x1);
            for (Cltk h : hs) h.close();
        }
    }
}
