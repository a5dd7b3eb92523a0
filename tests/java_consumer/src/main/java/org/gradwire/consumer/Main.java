package org.gradwire.consumer;

import org.gradwire.Codec;
import org.gradwire.CodecSpec;
import org.gradwire.DType;
import org.gradwire.FrameInfo;
import org.gradwire.Gradwire;
import org.gradwire.Server;
import org.gradwire.Worker;

/**
 * Two workers and a server over scaled-sign frames (error feedback, Nesterov
 * momentum) minimise sum_i (x_i - t_i)^2 / 2; each worker's gradient carries an
 * offset the other's cancels, so only the average reaches the optimum t. Prints
 * where the gradwire classes came from and the result; exits 1 when the round
 * trips did not reach t or the frames were not compressed.
 */
public final class Main {
    public static void main(String[] args) {
        final int n = 4096, workers = 2, steps = 200;
        final float lr = 0.02f;
        String jar = Gradwire.class.getProtectionDomain().getCodeSource().getLocation().getPath();
        float[] x = new float[n], t = new float[n], grad = new float[n];
        for (int i = 0; i < n; i++) t[i] = (i % 7) * 0.5f - 1.5f;
        long workerBytes = 0, serverBytes = 0;
        try (CodecSpec spec = new CodecSpec(Codec.SCALED_SIGN);
             Server server = new Server(n, workers, spec)) {
            Worker[] w = new Worker[workers];
            for (int k = 0; k < workers; k++) w[k] = new Worker(n, spec);
            try {
                for (int step = 0; step < steps; step++) {
                    for (int k = 0; k < workers; k++) {
                        float offset = k == 0 ? 0.25f : -0.25f;
                        for (int i = 0; i < n; i++) grad[i] = x[i] - t[i] + offset;
                        byte[] frame = w[k].step(grad, DType.FLOAT32, lr);
                        FrameInfo info = Gradwire.frameInspect(frame);
                        if (info.getCodec() != Codec.SCALED_SIGN || info.getFrameSize() != frame.length) {
                            fail("worker frame header: codec " + info.getCodec() + ", size " + info.getFrameSize());
                        }
                        workerBytes += frame.length;
                        server.push(frame);
                    }
                    byte[] update = server.step(lr);
                    serverBytes += update.length;
                    Gradwire.decodeAccumulate(update, -lr, x);  // x -= lr * averaged update
                }
            } finally {
                for (Worker k : w) if (k != null) k.close();
            }
        }
        double err = 0, norm = 0;  // |x - t| / |t|: 1 at the start
        for (int i = 0; i < n; i++) {
            err += (x[i] - t[i]) * (x[i] - t[i]);
            norm += t[i] * t[i];
        }
        err = Math.sqrt(err / norm);
        double ratio = (double) steps * workers * n * Float.BYTES / workerBytes;
        System.out.printf("consumer: gradwire %s from %s%n", Gradwire.version(), jar);
        System.out.printf("consumer: %d workers x %d steps over %d floats, %d + %d bytes of frames"
                + " (%.1fx smaller than float32), |x - optimum| / |optimum| = %.4f (1 at the start)%n",
                workers, steps, n, workerBytes, serverBytes, ratio, err);
        if (!(err < 0.05)) fail("did not reach the optimum");
        if (!(ratio > 16)) fail("frames not compressed");
        System.out.println("consumer: ok");
    }

    private static void fail(String why) {
        System.out.println("consumer: FAILED: " + why);
        System.exit(1);
    }
}
