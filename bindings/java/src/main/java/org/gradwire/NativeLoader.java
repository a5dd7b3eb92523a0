package org.gradwire;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Loads libgradwire_jni.so once: from the system property gradwire.library.path
 * (a file), else from the jar (native/linux-x86_64/), else from java.library.path.
 */
final class NativeLoader {
    private static boolean loaded;

    private NativeLoader() {}

    static synchronized void load() {
        if (loaded) return;
        String path = System.getProperty("gradwire.library.path");
        if (path != null && !path.isEmpty()) {
            System.load(Path.of(path).toAbsolutePath().toString());
        } else if (!loadFromJar()) {
            System.loadLibrary("gradwire_jni");
        }
        loaded = true;
    }

    private static boolean loadFromJar() {
        String arch = System.getProperty("os.arch").replace("amd64", "x86_64");
        String resource = "/native/linux-" + arch + "/libgradwire_jni.so";
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) return false;
            Path tmp = Files.createTempFile("gradwire_jni", ".so");
            tmp.toFile().deleteOnExit();
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            System.load(tmp.toString());
            return true;
        } catch (IOException e) {
            throw new UnsatisfiedLinkError("gradwire: cannot extract " + resource + ": " + e);
        }
    }
}
