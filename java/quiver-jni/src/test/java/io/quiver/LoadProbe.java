package io.quiver;

import java.io.File;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;

/**
 * The main class of the child JVMs of {@link NativeLibraryLoadingTest}. It
 * refers to Quiver's classes only by reflection, so it also runs with a class
 * path that has none of them. Prints one line per fact, "key=value", and
 * exits 0 whatever happened to the load (the parent judges the facts; a
 * crash of the JVM is a nonzero exit).
 *
 *   load                   NativeLibrary.load(), then its source and version
 *   loaders CLASSES_DIR    load from two class loaders over CLASSES_DIR
 *   system LIBRARY_FILE    System.load(LIBRARY_FILE) with no Quiver class around
 */
public final class LoadProbe {
    private LoadProbe() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "load":
                report("first", () -> call(Class.forName("io.quiver.NativeLibrary"), "version"));
                report("source", () -> call(Class.forName("io.quiver.NativeLibrary"), "source"));
                break;
            case "loaders":
                for (int i = 1; i <= 2; i++) {
                    URLClassLoader loader = new URLClassLoader(new URL[] {new File(args[1]).toURI().toURL()},
                            ClassLoader.getPlatformClassLoader());
                    Class<?> lib = Class.forName("io.quiver.NativeLibrary", true, loader);
                    report("loader" + i, () -> call(lib, "version"));
                }
                break;
            case "system":
                report("system", () -> {
                    System.load(args[1]);
                    return "loaded";
                });
                break;
            default:
                throw new IllegalArgumentException(args[0]);
        }
        System.out.println("exit=clean");
    }

    interface Step {
        Object run() throws Throwable;
    }

    private static void report(String key, Step step) {
        try {
            System.out.println(key + "=ok:" + step.run());
        } catch (Throwable t) {
            Throwable e = t instanceof InvocationTargetException ? t.getCause() : t;
            System.out.println(key + "=" + e.getClass().getName() + ":" + oneLine(e.getMessage())
                    + (e.getCause() != null ? " cause=" + e.getCause().getClass().getName() + ":"
                            + oneLine(e.getCause().getMessage()) : ""));
        }
    }

    private static String oneLine(String s) {
        return s == null ? "" : s.replace('\n', ' ');
    }

    private static Object call(Class<?> cls, String method) throws Exception {
        Method m = cls.getMethod(method);
        return m.invoke(null);
    }
}
