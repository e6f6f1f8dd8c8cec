/*
 * urlpattern_test.c — golden cases of the URL pattern rules
 * (agg/urlpattern.h): url -> pattern for the automatic rules (including
 * segments that must never collapse: versions, locales, short words), user
 * patterns overriding them (order, scheme, host, port, '*', '**'), query
 * names, and the checks of user patterns.
 */
#include "agg/urlpattern.h"
#include "testutil.h"

/* One golden case: the user patterns ('|' between them, "" for none), the
 * request as scheme://host:port/path[?keys, comma separated], the pattern. */
typedef struct gold {
    const char *user;
    const char *url;
    const char *want;
} gold;

static const gold cases[] = {
    /* automatic: numbers, UUIDs, hex, e-mails, tokens, slugs, long */
    { "", "https://api.example.com:443/v2/users/123/orders/9", "/v2/users/{id}/orders/{id}" },
    { "", "https://api.example.com:443/", "/" },
    { "", "https://a.b:443/0", "/{id}" },
    { "", "https://a.b:443/items/18446744073709551616", "/items/{id}" },
    { "", "https://a.b:443/u/3f2c9a1e-77b0-4c1d-9e2f-0123456789ab/avatar", "/u/{uuid}/avatar" },
    { "", "https://a.b:443/u/3F2C9A1E-77B0-4C1D-9E2F-0123456789AB", "/u/{uuid}" },
    { "", "https://a.b:443/blob/da39a3ee5e6b4b0d3255bfef95601890afd80709", "/blob/{hex}" },
    { "", "https://a.b:443/doc/507f1f77bcf86cd799439011", "/doc/{hex}" },
    { "", "https://a.b:443/c/5f2b8e3a9c1d4e7f", "/c/{hex}" },
    { "", "https://a.b:443/users/jane@example.com/inbox", "/users/{email}/inbox" },
    { "", "https://a.b:443/users/jane%40example.com", "/users/{email}" },
    { "", "https://a.b:443/users/u123456", "/users/{id}" },
    { "", "https://a.b:443/p/A1B2C3", "/p/{id}" },
    { "", "https://a.b:443/s/dGhpcyBpcyBhIHRva2VuMTIz", "/s/{token}" },
    { "", "https://a.b:443/s/aGVsbG8gd29ybGQhIQ==", "/s/{token}" },
    { "", "https://a.b:443/s/aGVsbG8gd29ybGQhIQ%3D%3D", "/s/{token}" },
    { "", "https://a.b:443/s/xk2j9q7v4m1p0z8w", "/s/{token}" },
    { "", "https://a.b:443/p/product-name-123456", "/p/{slug}" },
    { "", "https://a.b:443/x/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      "/x/{long}" },
    { "", "https://a.b:443/a//b/", "/a//b/" },
    /* a file extension is kept after the stem's placeholder */
    { "", "https://cdn.b:443/img/b2db628ca1b2c3d4e5f6.jpg", "/img/{hex}.jpg" },
    { "", "https://a.b:443/items/123.json", "/items/{id}.json" },
    { "", "https://a.b:443/u/3f2c9a1e-77b0-4c1d-9e2f-0123456789ab.webp", "/u/{uuid}.webp" },
    { "", "https://a.b:443/v/xk2j9q7v4m1p0z8w.mp4", "/v/{token}.mp4" },
    { "", "https://a.b:443/p/product-name-123456.html", "/p/{slug}.html" },
    /* automatic: must NOT collapse */
    { "", "https://a.b:443/v2/1.0/a.b/x.1234/main.min.js/.jpg", "/v2/1.0/a.b/x.1234/main.min.js/.jpg" },
    { "", "https://a.b:443/v2/en-US/api/users", "/v2/en-US/api/users" },
    { "", "https://a.b:443/v1.2.3/android14/html5/web3", "/v1.2.3/android14/html5/web3" },
    { "", "https://a.b:443/oauth2/2fa/me/x86_64/utf-8", "/oauth2/2fa/me/x86_64/utf-8" },
    { "", "https://a.b:443/iphone-15/covid19/mp4", "/iphone-15/covid19/mp4" },
    { "", "https://a.b:443/static/index.html", "/static/index.html" },
    { "", "https://a.b:443/cafe/feed/decade/facade", "/cafe/feed/decade/facade" },
    { "", "https://a.b:443/deadbeefcafebabe", "/deadbeefcafebabe" },
    { "", "https://a.b:443/this-is-a-long-slug-name", "/this-is-a-long-slug-name" },
    { "", "https://a.b:443/user_profile_settings", "/user_profile_settings" },
    { "", "https://a.b:443/graphql", "/graphql" },
    { "", "https://a.b:443/ab12c", "/ab12c" },
    { "", "https://a.b:443/2024-report", "/2024-report" },
    { "", "https://a.b:443/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 64 */
      "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
    /* query names: sorted, unique, values never present */
    { "", "https://a.b:443/search?q,lang,q", "/search?lang={}&q={}" },
    { "", "https://a.b:443/12?b,a", "/{id}?a={}&b={}" },
    /* user patterns override the automatic rules */
    { "https://api.example.com/v2/users/*/orders/*",
      "https://api.example.com:443/v2/users/123/orders/9", "/v2/users/*/orders/*" },
    { "https://api.example.com/v2/users/*/orders/*",
      "https://api.example.com:443/v2/users/jane/orders/9", "/v2/users/*/orders/*" },
    /* ... only where they match: other host, scheme, port, length */
    { "https://api.example.com/v2/users/*/orders/*",
      "https://cdn.example.com:443/v2/users/123/orders/9", "/v2/users/{id}/orders/{id}" },
    { "https://api.example.com/v2/users/*/orders/*",
      "http://api.example.com:80/v2/users/123/orders/9", "/v2/users/{id}/orders/{id}" },
    { "api.example.com:8443/v2/users/*", "https://api.example.com:443/v2/users/1",
      "/v2/users/{id}" },
    { "api.example.com:8443/v2/users/*", "https://api.example.com:8443/v2/users/1",
      "/v2/users/*" },
    { "https://api.example.com/v2/users/*/orders/*",
      "https://api.example.com:443/v2/users/123/orders", "/v2/users/{id}/orders" },
    { "https://api.example.com/v2/users/*/orders/*",
      "https://api.example.com:443/v2/users/123/orders/9/items", "/v2/users/{id}/orders/{id}/items" },
    /* '*' is one non-empty segment */
    { "*/a/*", "https://x.y:443/a/", "/a/" },
    /* a literal segment keeps a value the automatic rules would collapse */
    { "*/v1/2024-report/*", "https://x.y:443/v1/2024-report/7", "/v1/2024-report/*" },
    { "*/releases/12345", "https://x.y:443/releases/12345", "/releases/12345" },
    /* a port with leading zeros is its number, however many digits */
    { "x.y:0000443/v1/*", "https://x.y:443/v1/7", "/v1/*" },
    /* '**': the rest, zero or more segments */
    { "cdn.example.com/static/**", "https://cdn.example.com:443/static/a/b/c.png", "/static/**" },
    { "cdn.example.com/static/**", "https://cdn.example.com:443/static", "/static/**" },
    { "cdn.example.com/static/**", "https://cdn.example.com:443/img/1", "/img/{id}" },
    /* the first matching pattern wins */
    { "*/users/me|*/users/*", "https://x.y:443/users/me", "/users/me" },
    { "*/users/*|*/users/me", "https://x.y:443/users/me", "/users/*" },
    { "*/users/*|*/users/me", "https://x.y:443/users/42", "/users/*" },
    /* the root */
    { "*/", "https://x.y:443/", "/" },
    { "*/", "https://x.y:443/a", "/a" },
    /* query names after a user pattern too */
    { "*/search/*", "https://x.y:443/search/books?q", "/search/*?q={}" },
};

/* Applies the golden case's user patterns to its URL. */
static void run_case(const gold *g)
{
    bl_urlpat_set *s;
    ck_assert_int_eq(bl_urlpat_set_new(&s), BL_OK);
    char err[200];
    for (const char *p = g->user; *p;) {
        const char *e = strchr(p, '|');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        ck_assert_msg(bl_urlpat_set_add(s, p, n, err, sizeof err) == BL_OK, "%s: %s", p, err);
        p += n + (e != NULL);
    }
    char scheme[8], host[64], path[4096], keys[256];
    unsigned port;
    const char *u = g->url;
    const char *c = strstr(u, "://");
    snprintf(scheme, sizeof scheme, "%.*s", (int)(c - u), u);
    const char *h = c + 3, *col = strchr(h, ':');
    snprintf(host, sizeof host, "%.*s", (int)(col - h), h);
    port = (unsigned)strtoul(col + 1, NULL, 10);
    const char *sl = strchr(col, '/'), *qm = strchr(sl, '?');
    snprintf(path, sizeof path, "%.*s", qm ? (int)(qm - sl) : (int)strlen(sl), sl);
    snprintf(keys, sizeof keys, "%s", qm ? qm + 1 : "");
    const char *kv[BL_URLPAT_KEYS_MAX];
    size_t kl[BL_URLPAT_KEYS_MAX], nk = 0;
    for (char *k = keys; *k && nk < BL_URLPAT_KEYS_MAX;) {
        char *e = strchr(k, ',');
        kv[nk] = k;
        kl[nk++] = e ? (size_t)(e - k) : strlen(k);
        k += kl[nk - 1] + (e != NULL);
    }
    bl_urlpat_req q = { scheme, host, port, path, strlen(path), kv, kl, nk };
    bl_buf out;
    bl_buf_init(&out, 0);
    ck_assert_int_eq(bl_urlpat_apply(s, &q, &out, NULL), BL_OK);
    ck_assert_msg(!strcmp(out.data, g->want), "user '%s', url %s: want %s, got %s", g->user,
                  g->url, g->want, out.data);
    ck_assert_uint_eq(out.len, strlen(g->want));
    bl_buf_cleanup(&out);
    bl_urlpat_set_free(s);
}

START_TEST(golden)
{
    run_case(&cases[_i]);
}
END_TEST

/* user patterns refused, with a reason naming the problem */
static const struct {
    const char *p;
    const char *why;
} refused[] = {
    { "", "empty" },
    { "/v2/users/*", "no host" },
    { "api.example.com", "no path" },
    { "ftp://api.example.com/x", "scheme" },
    { "API.example.com/x", "lower-case" },
    { "api.example.com:0/x", "port" },
    { "api.example.com:70000/x", "port" },
    { "api.example.com/a//b", "empty path segment" },
    { "api.example.com/a/", "empty path segment" },
    { "api.example.com/a*/b", "whole segment" },
    { "api.example.com/**/b", "last segment" },
    { "api.example.com/a?b=1", "'?'" },
    { "api.example.com/a#f", "'#'" },
    { "api.example.com/a b", "space" },
};

START_TEST(check_refused)
{
    char err[200] = "";
    const char *p = refused[_i].p;
    ck_assert_int_eq(bl_urlpat_check(p, strlen(p), err, sizeof err), BL_EINVAL);
    ck_assert_msg(strstr(err, refused[_i].why), "'%s': '%s' lacks '%s'", p, err, refused[_i].why);
}
END_TEST

START_TEST(caps)
{
    char p[BL_URLPAT_MAX_LEN + 2], err[200];
    memset(p, 'a', sizeof p);
    memcpy(p, "*/", 2);
    ck_assert_int_eq(bl_urlpat_check(p, BL_URLPAT_MAX_LEN, err, sizeof err), BL_OK);
    ck_assert_int_eq(bl_urlpat_check(p, BL_URLPAT_MAX_LEN + 1, err, sizeof err), BL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "512"));
    bl_urlpat_set *s;
    ck_assert_int_eq(bl_urlpat_set_new(&s), BL_OK);
    for (int i = 0; i < BL_URLPAT_MAX_PATTERNS; i++)
        ck_assert_int_eq(bl_urlpat_set_add(s, "*/a", 3, err, sizeof err), BL_OK);
    ck_assert_int_eq(bl_urlpat_set_add(s, "*/a", 3, err, sizeof err), BL_ETOOBIG);
    ck_assert_uint_eq(bl_urlpat_set_count(s), BL_URLPAT_MAX_PATTERNS);
    bl_urlpat_set_clear(s);
    ck_assert_uint_eq(bl_urlpat_set_count(s), 0);
    bl_urlpat_set_free(s);
    /* the longest output stays under BL_URLPAT_OUT_MAX: "/@" repeated */
    char path[BL_URLPAT_PATH_MAX + 1];
    for (int i = 0; i < BL_URLPAT_PATH_MAX; i += 2)
        memcpy(path + i, "/@", 2);
    const char *kv[BL_URLPAT_KEYS_MAX];
    size_t kl[BL_URLPAT_KEYS_MAX];
    static char keys[BL_URLPAT_KEYS_MAX][BL_URLPAT_KEY_MAX];
    for (int i = 0; i < BL_URLPAT_KEYS_MAX; i++) {
        memset(keys[i], 'k', BL_URLPAT_KEY_MAX);
        keys[i][0] = (char)('A' + i);
        kv[i] = keys[i];
        kl[i] = BL_URLPAT_KEY_MAX;
    }
    bl_urlpat_req q = { "https", "h", 443, path, BL_URLPAT_PATH_MAX, kv, kl, BL_URLPAT_KEYS_MAX };
    bl_buf out;
    bl_buf_init(&out, 0);
    ck_assert_int_eq(bl_urlpat_apply(NULL, &q, &out, NULL), BL_OK);
    ck_assert_uint_le(out.len, BL_URLPAT_OUT_MAX);
    /* the path part: the placeholders that fit in 2048 bytes, then /{more} */
    const char *qm = strchr(out.data, '?');
    ck_assert_ptr_nonnull(qm);
    ck_assert_uint_le((size_t)(qm - out.data), BL_URLPAT_PATH_MAX);
    ck_assert_uint_ge((size_t)(qm - out.data), BL_URLPAT_PATH_MAX - 15);
    ck_assert_int_eq(memcmp(qm - 7, "/{more}", 7), 0);
    ck_assert_int_eq(memcmp(out.data, "/{email}/{email}", 16), 0);
    /* a path that fits with its placeholders is not cut */
    q.n_keys = 0;
    memcpy(path, "/1/1", 4);
    q.path_len = 4;
    ck_assert_int_eq(bl_urlpat_apply(NULL, &q, &out, NULL), BL_OK);
    ck_assert_str_eq(out.data, "/{id}/{id}");
    q.path_len = BL_URLPAT_PATH_MAX + 1;
    ck_assert_int_eq(bl_urlpat_apply(NULL, &q, &out, NULL), BL_EINVAL);
    bl_buf_cleanup(&out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("urlpattern");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, golden, 0, (int)(sizeof cases / sizeof *cases));
    tcase_add_loop_test(tc, check_refused, 0, (int)(sizeof refused / sizeof *refused));
    tcase_add_test(tc, caps);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
