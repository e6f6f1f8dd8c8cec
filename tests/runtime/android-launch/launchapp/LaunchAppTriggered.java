package launchapp;

/** {@link LaunchApp} in triggered upload mode (the Android default). */
public class LaunchAppTriggered extends LaunchApp {
    @Override
    protected String mode() {
        return "triggered";
    }
}
