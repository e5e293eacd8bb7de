import AssociatedDomains
import Testing

struct SmartAppBannerTests {
    /// Pages and the banner read from them: app ID, argument, affiliate data, unknown keys.
    @Test(
        arguments: [
            (
                #"<head><meta name="apple-itunes-app" content="app-id=640199958, app-argument=https://developer.apple.com/wwdc/schedule, affiliate-data=optionalAffiliateData"></head>"#,
                "640199958", "https://developer.apple.com/wwdc/schedule", "optionalAffiliateData", [String]()
            ),
            (#"<META CONTENT='app-id=1' NAME='Apple-iTunes-App'>"#, "1", nil, nil, []),
            (
                "<meta\ncontent=\"app-id = 42 ,app-argument= myapp://x?a=1&amp;b=2\"\n  name = apple-itunes-app />",
                "42", "myapp://x?a=1&b=2", nil, []
            ),
            (
                #"<meta name="apple-itunes-app" content="app-id=7, app-argument=https://e.example/a,b,c, foo=bar">"#,
                "7", "https://e.example/a,b,c", nil, ["foo"]
            ),
            (
                #"<!-- <meta name="apple-itunes-app" content="app-id=999"> --><script>var s = '<meta name="apple-itunes-app" content="app-id=998">';</script><meta name="apple-itunes-app" content="app-id=5"><meta name="apple-itunes-app" content="app-id=6">"#,
                "5", nil, nil, []
            ),
            (
                #"<meta property="og:x" content="y"><meta name=" apple-itunes-app " content="app-id=&#56;&#x39;">"#,
                "89", nil, nil, []
            ),
        ] as [(String, String, String?, String?, [String])])
    func reads(_ html: String, _ appID: String, _ argument: String?, _ affiliate: String?, _ unknown: [String]) throws {
        let banner = try SmartAppBanner(html: bytes(html))
        #expect(banner.appID == appID && banner.appArgument == argument && banner.affiliateData == affiliate)
        #expect(banner.unknownKeys == unknown)
    }

    @Test func onlyTheFirstTagCountsAndTheOthersAreCounted() throws {
        let banner = try SmartAppBanner(
            html: bytes(
                #"<meta name="apple-itunes-app" content="app-id=1"><meta name="apple-itunes-app" content="app-id=2">"#))
        #expect(banner.appID == "1" && banner.tagCount == 2)
    }

    @Test(arguments: [
        ("<html><head><title>No banner</title></head></html>", AssociationFileError.Code.noBanner),
        (#"<meta name="apple-itunes-app-x" content="app-id=1">"#, .noBanner),
        (#"<meta name="apple-itunes-app" content="app-argument=https://e.example">"#, .invalidBanner),
        (#"<meta name="apple-itunes-app" content="app-id=id640199958">"#, .invalidBanner),
        (#"<meta name="apple-itunes-app" content="app-id=">"#, .invalidBanner),
        (#"<meta name="apple-itunes-app">"#, .invalidBanner),
        ("<meta name=\"apple-itunes-app\" content=\"app-id=1", .noBanner),
        ("<title>x <meta name=\"apple-itunes-app\" content=\"app-id=1\">", .noBanner),
    ])
    func refuses(_ html: String, _ code: AssociationFileError.Code) {
        let error = #expect(throws: AssociationFileError.self) { try SmartAppBanner(html: bytes(html)) }
        #expect(error?.code == code, "\(error?.message ?? "")")
    }
}
