package org.gradwire;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * README.md's Java example, which tests/java_test.sh extracts into the directory
 * named by GRADWIRE_README_DIR (the pom's readme-example profile compiles both).
 */
class ReadmeExampleTest {
    @Test
    void readmeExampleRuns() throws Exception {
        Class<?> c = Class.forName("ReadmeExample");
        PrintStream saved = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (PrintStream capture = new PrintStream(out, true, StandardCharsets.UTF_8)) {
            System.setOut(capture);
            c.getMethod("main", String[].class).invoke(null, (Object) new String[0]);
        } finally {
            System.setOut(saved);
        }
        String printed = out.toString(StandardCharsets.UTF_8);
        saved.print(printed);
        // The README says the example reaches the optimum 1.
        Matcher m = Pattern.compile("x\\[0\\] = (-?[0-9]+[.,][0-9]+)").matcher(printed);
        assertTrue(m.find(), "README example printed: " + printed);
        assertEquals(1.0, Double.parseDouble(m.group(1).replace(',', '.')), 0.05, printed);
    }
}
