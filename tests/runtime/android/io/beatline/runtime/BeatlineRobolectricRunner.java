package io.beatline.runtime;

import org.junit.runners.model.FrameworkMethod;
import org.junit.runners.model.InitializationError;
import org.robolectric.RobolectricTestRunner;
import org.robolectric.internal.bytecode.InstrumentationConfiguration;

/**
 * Robolectric's runner with the Beatline runtime (and these tests) loaded in
 * the sandbox but not instrumented: Robolectric rewrites
 * {@code System.nanoTime()} in the classes it instruments to its paused fake
 * clock, and the runtime must read the real one, as on a device.
 */
public final class BeatlineRobolectricRunner extends RobolectricTestRunner {
    public BeatlineRobolectricRunner(Class<?> c) throws InitializationError {
        super(c);
    }

    @Override
    protected InstrumentationConfiguration createClassLoaderConfig(FrameworkMethod method) {
        return new InstrumentationConfiguration.Builder(super.createClassLoaderConfig(method))
                .doNotInstrumentPackage("io.beatline.runtime").build();
    }
}
