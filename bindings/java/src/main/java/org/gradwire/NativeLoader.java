package org.gradwire;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads libgradwire_jni once, the first of:
 * <ol>
 *   <li>the file named by the system property {@code gradwire.library.path};</li>
 *   <li>on Linux x86-64 (the one platform the jar carries a library for), the jar's
 *       {@code native/linux-x86_64/libgradwire_jni.so}, extracted to a temporary file;</li>
 *   <li>{@code System.loadLibrary("gradwire_jni")}, searching {@code java.library.path}:
 *       a libgradwire_jni built for another platform.</li>
 * </ol>
 * When none of them loads, an {@link UnsatisfiedLinkError} names the platform found
 * and the one supported.
 */
final class NativeLoader {
    /** The platform whose library the jar carries, as {@link #platform} spells it. */
    static final String SUPPORTED = "linux-x86_64";
    static final String RESOURCE = "/native/" + SUPPORTED + "/libgradwire_jni.so";

    private static boolean loaded;

    private NativeLoader() {}

    static synchronized void load() {
        if (loaded) return;
        load(System.getProperty("os.name", ""), System.getProperty("os.arch", ""));
        loaded = true;
    }

    /** Loads for the given os.name and os.arch (package-private for the tests). */
    static void load(String osName, String osArch) {
        String path = System.getProperty("gradwire.library.path");
        if (path != null && !path.isEmpty()) {
            System.load(Path.of(path).toAbsolutePath().toString());
            return;
        }
        boolean supported = SUPPORTED.equals(platform(osName, osArch));
        if (supported && loadFromJar()) return;
        try {
            System.loadLibrary("gradwire_jni");
        } catch (UnsatisfiedLinkError e) {
            UnsatisfiedLinkError err = new UnsatisfiedLinkError(supported
                    ? "gradwire: the jar lacks " + RESOURCE.substring(1) + " and libgradwire_jni is not on"
                      + " java.library.path (" + e.getMessage() + ")"
                    : unsupportedMessage(osName, osArch));
            err.initCause(e);
            throw err;
        }
    }

    /** os.name and os.arch as a jar directory name: "linux-x86_64", "mac_os_x-aarch64", ... */
    static String platform(String osName, String osArch) {
        String os = osName.toLowerCase(Locale.ROOT).trim();
        if (os.startsWith("linux")) os = "linux";
        else if (os.startsWith("windows")) os = "windows";
        os = os.replaceAll("[^a-z0-9]+", "_");
        String arch = osArch.toLowerCase(Locale.ROOT).trim();
        if (arch.equals("amd64") || arch.equals("x86-64")) arch = "x86_64";
        return os + "-" + arch;
    }

    /** The error on any platform but Linux x86-64 when no override library loads. */
    static String unsupportedMessage(String osName, String osArch) {
        return "gradwire: this JVM runs on " + osName + " " + osArch + " (" + platform(osName, osArch)
                + "), but the gradwire jar carries a native library for " + SUPPORTED
                + " (Linux x86-64) only. Build libgradwire_jni for this platform"
                + " (meson setup build -Djava=enabled, docs/java.md) and pass its directory with"
                + " -Djava.library.path=<dir> or the file with -Dgradwire.library.path=<file>.";
    }

    private static boolean loadFromJar() {
        try (InputStream in = NativeLoader.class.getResourceAsStream(RESOURCE)) {
            if (in == null) return false;
            Path tmp = Files.createTempFile("gradwire_jni", ".so");
            tmp.toFile().deleteOnExit();
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            System.load(tmp.toString());
            return true;
        } catch (IOException e) {
            throw new UnsatisfiedLinkError("gradwire: cannot extract " + RESOURCE + ": " + e);
        }
    }
}
