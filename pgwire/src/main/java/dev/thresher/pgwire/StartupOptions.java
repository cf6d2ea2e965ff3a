package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The {@code options} startup parameter (libpq's {@code options} and {@code PGOPTIONS}, pgjdbc's {@code options}):
 * command-line switches for the server, of which Thresher reads the settings, {@code -c name=value} (also
 * {@code -cname=value}) and {@code --name=value}, as PostgreSQL does: words are separated by spaces, a backslash
 * makes the next character part of the word, and a dash in a name stands for an underscore. Any other switch is
 * refused, as PostgreSQL refuses it.
 */
final class StartupOptions {
    private StartupOptions() {
    }

    /**
     * The settings in {@code options}, in order, names folded to lower case.
     *
     * @throws ThresherException {@link ErrorCode#SYNTAX_ERROR} for a switch other than a setting, or a setting
     *     without {@code =}
     */
    static Map<String, String> parse(String options) {
        List<String> words = words(options);
        Map<String, String> settings = new LinkedHashMap<>();
        for (int i = 0; i < words.size(); i++) {
            String w = words.get(i);
            String setting;
            if (w.equals("-c")) {
                if (i + 1 == words.size()) {
                    throw invalid(w);
                }
                setting = words.get(++i);
            } else if (w.startsWith("-c")) {
                setting = w.substring(2);
            } else if (w.startsWith("--")) {
                setting = w.substring(2);
            } else {
                throw invalid(w);
            }
            int eq = setting.indexOf('=');
            if (eq <= 0) {
                throw invalid(w.equals("-c") ? "-c " + setting : w);
            }
            settings.put(setting.substring(0, eq).replace('-', '_').toLowerCase(Locale.ROOT), setting.substring(eq + 1));
        }
        return settings;
    }

    private static List<String> words(String options) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        for (int i = 0; i < options.length(); i++) {
            char c = options.charAt(i);
            if (c == '\\' && i + 1 < options.length()) {
                word.append(options.charAt(++i));
                inWord = true;
            } else if (Character.isWhitespace(c)) {
                if (inWord) {
                    words.add(word.toString());
                    word.setLength(0);
                    inWord = false;
                }
            } else {
                word.append(c);
                inWord = true;
            }
        }
        if (inWord) {
            words.add(word.toString());
        }
        return words;
    }

    private static ThresherException invalid(String word) {
        return new ThresherException(ErrorCode.SYNTAX_ERROR, "invalid command-line argument in the startup options: "
                + word + "; Thresher reads settings there, as -c name=value or --name=value");
    }
}
