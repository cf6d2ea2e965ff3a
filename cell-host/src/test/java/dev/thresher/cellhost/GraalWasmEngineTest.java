package dev.thresher.cellhost;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import org.junit.jupiter.api.Test;

/**
 * Each component's guests run on a GraalWasm engine of their own, kept while the component has a sandbox or
 * until it is retired, so that one component's deoptimisations and recompilations never touch another's code.
 */
class GraalWasmEngineTest {
    private static WasmEngine.WasmSandbox sandbox(WasmEngine engine, String component) {
        return engine.newSandbox(component, new ByteArrayInputStream(new byte[0]), new ByteArrayOutputStream(),
                new ByteArrayOutputStream());
    }

    @Test
    void componentsHaveEnginesOfTheirOwnKeptUntilRetiredAndTheirLastSandboxIsClosed() {
        try (GraalWasmEngine engine = new GraalWasmEngine()) {
            WasmEngine.WasmSandbox a1 = sandbox(engine, "a");
            WasmEngine.WasmSandbox a2 = sandbox(engine, "a");
            WasmEngine.WasmSandbox b = sandbox(engine, "b");
            assertThat(engine.engines()).as("one engine per component, shared by its sandboxes").isEqualTo(2);

            a1.close();
            a2.close();
            assertThat(engine.engines()).as("a component's engine outlives its sandboxes until retired").isEqualTo(2);
            engine.retire("a");
            assertThat(engine.engines()).isEqualTo(1);

            engine.retire("b");
            assertThat(engine.engines()).as("retiring waits for the sandbox still open").isEqualTo(1);
            b.close();
            b.close(); // closing twice releases once
            assertThat(engine.engines()).isZero();

            WasmEngine.WasmSandbox again = sandbox(engine, "a");
            engine.retire("a");
            WasmEngine.WasmSandbox meanwhile = sandbox(engine, "a"); // a new sandbox takes the engine back
            again.close();
            assertThat(engine.engines()).as("a sandbox opened after the retirement keeps the engine").isEqualTo(1);
            meanwhile.close();
            assertThat(engine.engines()).isEqualTo(1);
            engine.retire("unknown");
        }
    }
}
