import AssociatedDomains
import Testing

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

struct AppIDTests {
    @Test(arguments: ["ABCDE12345.com.example.app", "9JA89QQLNQ.com.apple.wwdc", "ABCDE12345.a", "ABCDE12345.a-b.C9"])
    func valid(_ text: String) throws {
        let app = try AppID(text)
        #expect(app.description == text && app.teamID.count == 10)
    }

    @Test(arguments: [
        "", "com.example.app", "abcde12345.com.example.app", "ABCDE1234.com.example.app", "ABCDE12345.",
        "ABCDE12345.com..app", "ABCDE12345.com.exa mple", "ABCDE12345.com.example_app", "ABCDE12345",
    ])
    func invalid(_ text: String) {
        let error = #expect(throws: AssociationFileError.self) { try AppID(text) }
        #expect(error?.code == .invalidAppID)
    }
}

struct AssociationFileTests {
    static let file = """
        {
          "webcredentials": {"apps": ["ABCDE12345.com.example.app", "FGHIJ67890.com.example.app"], "future": 1},
          "activitycontinuation": {"apps": ["ABCDE12345.com.example.app"]},
          "appclips": {"apps": ["ABCDE12345.com.example.app.Clip"]},
          "applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": []}]},
          "unknownService": {"apps": 5}
        }
        """

    @Test func everyServiceIsReadAndUnknownKeysAreIgnored() throws {
        let association = try AppSiteAssociation(json: bytes(Self.file))
        let app = try AppID("ABCDE12345.com.example.app")
        for service in AssociatedService.allCases where service != .appclips {
            #expect(association.names(app: app, for: service), "\(service)")
            #expect(association.reasonNotNamed(app: app, for: service) == nil)
        }
        #expect(association.names(app: try AppID("ABCDE12345.com.example.app.Clip"), for: .appclips))
        #expect(!association.names(app: app, for: .appclips))
        #expect(association.apps(for: .webcredentials).count == 2)
    }

    @Test func theReasonSaysWhatIsWrong() throws {
        let association = try AppSiteAssociation(json: bytes(Self.file))
        let otherTeam = try AppID("ZZZZZ11111.com.example.app")
        #expect(
            association.reasonNotNamed(app: otherTeam, for: .webcredentials)?.contains("only under another team ID")
                == true)
        let unknown = try AppID("ABCDE12345.com.example.other")
        #expect(association.reasonNotNamed(app: unknown, for: .webcredentials)?.contains("does not list") == true)
        let onlyLinks = try AppSiteAssociation(json: bytes(#"{"applinks": {"details": []}}"#))
        #expect(
            onlyLinks.reasonNotNamed(app: unknown, for: .webcredentials) == "the file has no webcredentials section")
        let empty = try AppSiteAssociation(json: bytes(#"{"webcredentials": {"apps": []}}"#))
        #expect(empty.reasonNotNamed(app: unknown, for: .webcredentials) == "webcredentials.apps is empty")
        let lower = try AppSiteAssociation(
            json: bytes(#"{"webcredentials": {"apps": ["abcde12345.com.example.other"]}}"#))
        #expect(lower.reasonNotNamed(app: unknown, for: .webcredentials)?.contains("in case") == true)
    }

    @Test func theThreeApplinksFormsAreRecognised() throws {
        let forms = try [FormIOS9Tests.file, Form2015Tests.file, FormIOS13Tests.file].map { text in
            try #require(AppSiteAssociation(json: bytes(text)).applinks).details.map(\.form)
        }
        #expect(forms[0] == [.paths, .paths, .paths])
        #expect(forms[1] == [.dictionary2015, .dictionary2015])
        #expect(forms[2] == [.components, .components])
        let links = try #require(AppSiteAssociation(json: bytes(FormIOS13Tests.file)).applinks)
        #expect(links.defaults.caseSensitive == true && links.defaults.percentEncoded == nil)
        #expect(links.substitutionVariables["food"] == ["burrito", "pizza", "sushi"])
        #expect(links.details[0].components[3].query == .items([(name: "articleNumber", pattern: "????")]))
        #expect(links.details[0].components[0].comment == "never open these")
        #expect(links.details[0].appIDs == ["ABCDE12345.com.example.app", "ABCDE12345.com.example.app2"])
    }

    /// Each bad file and the JSON path its error names.
    @Test(arguments: [
        (#"{"webcredentials": {"apps": [1]}}"#, "webcredentials.apps[0]", AssociationFileError.Code.wrongType),
        (#"{"webcredentials": []}"#, "webcredentials", .wrongType),
        (#"{"applinks": {"details": [{"appIDs": "ABCDE12345.com.x"}]}}"#, "applinks.details[0].appIDs", .wrongType),
        (#"{"applinks": {"details": 3}}"#, "applinks.details", .wrongType),
        (#"{"applinks": {"details": {"A.b": {"paths": "/x"}}}}"#, #"applinks.details["A.b"].paths"#, .wrongType),
        (
            #"{"applinks": {"details": [{"components": [{"?": 5}]}]}}"#, #"applinks.details[0].components[0]["?"]"#,
            .wrongType
        ),
        (
            #"{"applinks": {"details": [{"components": [{"?": {"a": 1}}]}]}}"#,
            #"applinks.details[0].components[0]["?"].a"#, .wrongType
        ),
        (
            #"{"applinks": {"details": [{"components": [{"exclude": "yes"}]}]}}"#,
            "applinks.details[0].components[0].exclude", .wrongType
        ),
        (#"{"applinks": {"details": [{"components": ["/x"]}]}}"#, "applinks.details[0].components[0]", .wrongType),
        (#"{"applinks": {"defaults": {"caseSensitive": 0}}}"#, "applinks.defaults.caseSensitive", .wrongType),
        (
            #"{"applinks": {"details": [{"defaults": {"percentEncoded": null}}]}}"#,
            "applinks.details[0].defaults.percentEncoded", .wrongType
        ),
        (#"{"applinks": {"substitutionVariables": {"v": "x"}}}"#, "applinks.substitutionVariables.v", .wrongType),
        (
            #"{"applinks": {"substitutionVariables": {"v": ["$(alpha)"]}}}"#, "applinks.substitutionVariables.v[0]",
            .wrongType
        ),
        (
            #"{"applinks": {"details": [{"components": [{"/": "/$(nope)"}]}]}}"#,
            #"applinks.details[0].components[0]["/"]"#, .wrongType
        ),
        (
            ##"{"applinks": {"details": [{"components": [{"#": "$(alpha"}]}]}}"##,
            ##"applinks.details[0].components[0]["#"]"##, .wrongType
        ),
        ("[]", "", .wrongType),
        ("{\"webcredentials\": ", "", .malformedJSON),
        ("<html><body>Not found</body></html>", "", .malformedJSON),
    ])
    func badFiles(_ text: String, _ path: String, _ code: AssociationFileError.Code) {
        let error = #expect(throws: AssociationFileError.self) { try AppSiteAssociation(json: bytes(text)) }
        #expect(error?.code == code)
        #expect(error?.path == path)
        if !path.isEmpty { #expect(error?.message.contains(path) == true, "\(error?.message ?? "")") }
    }

    @Test func aFileOverTheLimitIsRefusedBeforeParsing() {
        let big = bytes("{\"x\": \"" + String(repeating: "a", count: AppSiteAssociation.maximumBytes) + "\"}")
        let error = #expect(throws: AssociationFileError.self) { try AppSiteAssociation(json: big) }
        #expect(error?.code == .tooLarge)
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        let deep = bytes(
            "{\"x\": " + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}")
        let error = #expect(throws: AssociationFileError.self) { try AppSiteAssociation(json: deep) }
        #expect(error?.code == .malformedJSON || error?.code == .tooLarge)
    }

    @Test func predefinedVariablesMatchOneOfTheirValues() throws {
        let file = """
            {"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [
              {"/": "/$(alpha)$(upper)$(lower)$(alnum)$(digit)"}, {"/": "/lang/$(lang)"}, {"/": "/region/$(region)"}]}]}}
            """
        let association = try AppSiteAssociation(json: bytes(file))
        let app = try AppID("ABCDE12345.com.example.app")
        for (path, outcome) in [
            ("/aBc99", LinkVerdict.Outcome.open), ("/abc99", .browser), ("/aBC99", .browser), ("/aBcZ9", .open),
            ("/aBc9x", .browser), ("/lang/en", .open), ("/lang/yue", .open), ("/lang/EN", .browser),
            ("/region/US", .open), ("/region/DE", .open), ("/region/us", .browser), ("/region/USA", .browser),
        ] {
            #expect(association.match(url: "https://example.com" + path, app: app).outcome == outcome, "\(path)")
        }
    }
}
