package io.beatline.runtime.android;

import android.content.ContentProvider;
import android.content.ContentValues;
import android.database.Cursor;
import android.net.Uri;

/**
 * Starts the runtime (issue 14): declared in the AAR's manifest
 * ({@code ${applicationId}.beatline-init}, not exported), so Android creates
 * it in every process of the app before {@code Application.onCreate}; its
 * {@code android:initOrder} is 1000 (providers of a higher order are made
 * first; the default is 0), so it runs before the app's own providers,
 * whose start-up work is then measured. {@link #onCreate} calls
 * {@link AndroidStart#start} with the manifest meta-data. It serves no data.
 *
 * <p>To start the runtime yourself instead, remove it in the app's manifest:
 * {@code <provider android:name="io.beatline.runtime.android.BeatlineInitProvider"
 * android:authorities="${applicationId}.beatline-init" tools:node="remove"/>}.
 */
public final class BeatlineInitProvider extends ContentProvider {
    /** Whether this provider's {@link #onCreate} started the runtime (tests). */
    static volatile boolean started;

    @Override
    public boolean onCreate() {
        try {
            started = getContext() != null && AndroidStart.start(getContext());
        } catch (Throwable t) {
            started = false; // never into the app's start-up
        }
        return true;
    }

    @Override
    public Cursor query(Uri uri, String[] projection, String selection, String[] args, String sortOrder) {
        return null;
    }

    @Override
    public String getType(Uri uri) {
        return null;
    }

    @Override
    public Uri insert(Uri uri, ContentValues values) {
        return null;
    }

    @Override
    public int delete(Uri uri, String selection, String[] args) {
        return 0;
    }

    @Override
    public int update(Uri uri, ContentValues values, String selection, String[] args) {
        return 0;
    }
}
