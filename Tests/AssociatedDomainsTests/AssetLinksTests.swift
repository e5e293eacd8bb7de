import AssociatedDomains
import Testing

struct AssetLinksTests {
    static let print1 =
        "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
    static let print2 = String(repeating: "AB:", count: 31) + "CD"

    /// Google's sample (developer.android.com, "Credential Manager": Digital Asset Links) with a second app, a web
    /// target and an include, fingerprints written in lower case.
    static let file = """
        [
          {"relation": ["delegate_permission/common.handle_all_urls", "delegate_permission/common.get_login_creds"],
           "target": {"namespace": "android_app", "package_name": "com.example.android",
                      "sha256_cert_fingerprints": ["\(print1.lowercased())"]}},
          {"relation": ["delegate_permission/common.handle_all_urls"],
           "target": {"namespace": "android_app", "package_name": "com.example.links",
                      "sha256_cert_fingerprints": ["\(print2)"]}},
          {"relation": ["delegate_permission/common.get_login_creds"],
           "target": {"namespace": "web", "site": "https://Signin.Example.com:443/path"}},
          {"relation": ["x"], "target": {"namespace": "ios_app", "appid": "X"}, "future": true},
          {"include": "https://example.com/more-links.json"}
        ]
        """

    @Test func grantsAreReadAndFingerprintsCompareAsBytes() throws {
        let links = try AssetLinks(json: bytes(Self.file))
        #expect(links.statements.count == 4 && links.includes == ["https://example.com/more-links.json"])
        let first = try AssetLinks.fingerprint(Self.print1)
        #expect(links.grants(AssetLinks.getLoginCredentials, packageName: "com.example.android", fingerprint: first))
        #expect(links.grants(AssetLinks.handleAllURLs, packageName: "com.example.android", fingerprint: first))
        let second = try AssetLinks.fingerprint(Self.print2.lowercased())
        #expect(links.grants(AssetLinks.handleAllURLs, packageName: "com.example.links", fingerprint: second))
        #expect(!links.grants(AssetLinks.getLoginCredentials, packageName: "com.example.links", fingerprint: second))
        #expect(
            links.reasonNotGranted(
                AssetLinks.getLoginCredentials, packageName: "com.example.links", fingerprint: second)?
                .contains("grant delegate_permission/common.handle_all_urls") == true)
        #expect(
            links.reasonNotGranted(
                AssetLinks.getLoginCredentials, packageName: "com.example.android", fingerprint: second)?
                .contains("other certificate fingerprints") == true)
        #expect(
            links.reasonNotGranted(AssetLinks.getLoginCredentials, packageName: "com.other", fingerprint: first)
                == "no statement names the Android app com.other")
        #expect(links.grants(AssetLinks.getLoginCredentials, site: "https://signin.example.com"))
        #expect(!links.grants(AssetLinks.getLoginCredentials, site: "https://example.com"))
        #expect(!links.grants(AssetLinks.getLoginCredentials, site: "http://signin.example.com"))
        #expect(AssetLinks.fingerprintText(first) == Self.print1)
    }

    @Test(arguments: [
        ("{}", "", AssociationFileError.Code.wrongType),
        ("[5]", "[0]", .wrongType),
        (#"[{"target": {"namespace": "web", "site": "https://a.example"}}]"#, "[0].relation", .missingMember),
        (#"[{"relation": []}]"#, "[0].target", .missingMember),
        (#"[{"relation": [1], "target": {}}]"#, "[0].relation[0]", .wrongType),
        (#"[{"relation": [], "target": {"package_name": "a"}}]"#, "[0].target.namespace", .missingMember),
        (#"[{"relation": [], "target": {"namespace": "android_app"}}]"#, "[0].target.package_name", .missingMember),
        (
            #"[{"relation": [], "target": {"namespace": "android_app", "package_name": "a", "sha256_cert_fingerprints": ["AB:CD"]}}]"#,
            "[0].target.sha256_cert_fingerprints[0]", .invalidFingerprint
        ),
        (
            #"[{"relation": [], "target": {"namespace": "web", "site": "ftp://a.example"}}]"#, "[0].target.site",
            .wrongType
        ),
        ("[", "", .malformedJSON),
    ])
    func badFiles(_ text: String, _ path: String, _ code: AssociationFileError.Code) {
        let error = #expect(throws: AssociationFileError.self) { try AssetLinks(json: bytes(text)) }
        #expect(error?.code == code && error?.path == path, "\(error?.message ?? "")")
    }

    @Test(arguments: [
        "", "14:6D", String(repeating: "AB:", count: 32) + "CD", String(repeating: "+A:", count: 31) + "CD",
        String(repeating: "ABC", count: 32), String(repeating: "GG:", count: 31) + "GG",
    ])
    func badFingerprints(_ text: String) {
        #expect(throws: AssociationFileError.self) { try AssetLinks.fingerprint(text) }
    }
}
