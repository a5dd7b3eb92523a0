package org.gradwire;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/** NativeLoader's platform rule: the jar's library on Linux x86-64, a clear error elsewhere. */
class NativeLoaderTest {
    @Test
    void platformNames() {
        assertEquals("linux-x86_64", NativeLoader.platform("Linux", "amd64"));
        assertEquals("linux-x86_64", NativeLoader.platform("Linux", "x86_64"));
        assertEquals("linux-aarch64", NativeLoader.platform("Linux", "aarch64"));
        assertEquals("mac_os_x-aarch64", NativeLoader.platform("Mac OS X", "aarch64"));
        assertEquals("windows-x86_64", NativeLoader.platform("Windows 11", "amd64"));
    }

    @Test
    void theJarCarriesTheLinuxLibrary() {
        assertNotNull(NativeLoader.class.getResource(NativeLoader.RESOURCE), NativeLoader.RESOURCE);
        // This JVM loaded it: calls into the library work.
        String[] v = Gradwire.version().split("\\.");
        assertEquals(3, v.length, Gradwire.version());
        assertEquals(Integer.parseInt(v[0]) * 10000 + Integer.parseInt(v[1]) * 100 + Integer.parseInt(v[2]),
                Gradwire.versionNumber());
    }

    @Test
    void otherPlatformsFailNamingBoth() {
        String msg = NativeLoader.unsupportedMessage("Mac OS X", "aarch64");
        assertTrue(msg.contains("Mac OS X aarch64"), msg);
        assertTrue(msg.contains("linux-x86_64"), msg);
        assertTrue(msg.contains("-Djava.library.path="), msg);
        assertTrue(msg.contains("-Dgradwire.library.path="), msg);
    }

    @Test
    void otherPlatformsThrowUnlessJavaLibraryPathHasALibrary() {
        // Surefire's JVM has no libgradwire_jni on java.library.path (the pom keeps
        // it to an empty directory) and no gradwire.library.path: the load fails
        // with the message above rather than trying the jar's Linux library.
        assertNull(System.getProperty("gradwire.library.path"));
        UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class,
                () -> NativeLoader.load("Mac OS X", "aarch64"));
        assertEquals(NativeLoader.unsupportedMessage("Mac OS X", "aarch64"), e.getMessage());
        assertTrue(e.getCause() instanceof UnsatisfiedLinkError);
        e = assertThrows(UnsatisfiedLinkError.class, () -> NativeLoader.load("Linux", "aarch64"));
        assertTrue(e.getMessage().contains("Linux aarch64 (linux-aarch64)"), e.getMessage());
    }
}
