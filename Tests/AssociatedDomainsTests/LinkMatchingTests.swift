import AssociatedDomains
import Testing

/// One universal-link case: the URL, the app, what happens, and (when a rule decides) where that rule is.
struct LinkCase: CustomTestStringConvertible, Sendable {
    var url: String
    var app = "ABCDE12345.com.example.app"
    var outcome: LinkVerdict.Outcome
    /// `detail.index` of the deciding rule, nil when none should decide.
    var rule: (detail: Int, index: Int)?

    var testDescription: String { "\(app) \(url) → \(outcome.rawValue)" }
}

func check(_ file: String, _ cases: [LinkCase], form: AppLinksForm, domain: String = "example.com") throws {
    let association = try AppSiteAssociation(json: Array(file.utf8))
    for item in cases {
        let verdict = association.match(url: item.url, app: try AppID(item.app), domain: domain)
        #expect(verdict.outcome == item.outcome, "\(item.testDescription): \(verdict.reason)")
        if let rule = item.rule {
            #expect(verdict.rule?.detail == rule.detail && verdict.rule?.index == rule.index, "\(item.testDescription)")
            #expect(verdict.rule?.form == form)
        } else {
            #expect(verdict.rule == nil, "\(item.testDescription): \(verdict.reason)")
        }
    }
}

struct Form2015Tests {
    /// WWDC 2015 session 509's file, with a second app and an exact path added.
    static let file = """
        {"applinks": {"apps": [], "details": {
          "ABCDE12345.com.example.app": {"paths": ["/wwdc/news/", "/videos/wwdc/2015/*", "/exact"]},
          "ZYXWV98765.com.other.app": {"paths": ["*"]}
        }}}
        """

    static let cases: [LinkCase] = [
        LinkCase(url: "https://example.com/wwdc/news/", outcome: .open, rule: (0, 0)),
        LinkCase(url: "https://example.com/wwdc/news", outcome: .browser),
        LinkCase(url: "https://example.com/wwdc/news/?utm=1", outcome: .open, rule: (0, 0)),
        LinkCase(url: "https://example.com/wwdc/news/#top", outcome: .open, rule: (0, 0)),
        LinkCase(url: "https://example.com/videos/wwdc/2015/", outcome: .open, rule: (0, 1)),
        LinkCase(url: "https://example.com/videos/wwdc/2015/abc/def", outcome: .open, rule: (0, 1)),
        LinkCase(url: "https://example.com/videos/wwdc/2014/", outcome: .browser),
        LinkCase(url: "https://example.com/VIDEOS/wwdc/2015/x", outcome: .browser),
        LinkCase(url: "https://example.com/exact", outcome: .open, rule: (0, 2)),
        LinkCase(url: "https://example.com/exact/", outcome: .browser),
        LinkCase(url: "https://example.com/exa?ct", outcome: .browser),
        LinkCase(url: "https://www.example.com/exact", outcome: .browser),
        LinkCase(url: "https://EXAMPLE.com./exact", outcome: .open, rule: (0, 2)),
        LinkCase(url: "http://example.com/exact", outcome: .browser),
        LinkCase(url: "https://example.com:8443/exact", outcome: .browser),
        LinkCase(url: "https://example.com:443/exact", outcome: .open, rule: (0, 2)),
        LinkCase(url: "https://user@example.com/exact", outcome: .open, rule: (0, 2)),
        LinkCase(url: "https://example.com/anything", app: "ZYXWV98765.com.other.app", outcome: .open, rule: (1, 0)),
        LinkCase(url: "https://example.com/exact", app: "ABCDE12345.com.unknown", outcome: .browser),
    ]

    @Test func table() throws { try check(Self.file, Self.cases, form: .dictionary2015) }

    @Test func theRuleNamesTheFormTheAppAndThePattern() throws {
        let association = try AppSiteAssociation(json: Array(Self.file.utf8))
        let verdict = association.match(
            url: "https://example.com/videos/wwdc/2015/x", app: try AppID("ABCDE12345.com.example.app"),
            domain: "example.com")
        let rule = try #require(verdict.rule)
        #expect(rule.location == "applinks.details[\"ABCDE12345.com.example.app\"].paths[1]")
        #expect(rule.pattern == "/videos/wwdc/2015/*")
        #expect("\(rule)".contains("2015 details dictionary"))
        let other = association.match(
            url: "https://www.example.com/exact", app: try AppID("ABCDE12345.com.example.app"), domain: "example.com")
        #expect(other.reason.contains("www.example.com is not example.com"))
    }
}

struct FormIOS9Tests {
    static let file = """
        {"applinks": {"apps": [], "details": [
          {"appID": "ABCDE12345.com.example.app",
           "paths": ["NOT /settings/*", "NOT /help/website", "/help/*", "/item/???", "/user/*/profile", "/a?c",
                     "/search"]},
          {"appID": "ABCDE12345.com.example.app", "paths": ["/second/*"]},
          {"appID": "ZYXWV98765.com.other.app", "paths": ["*"]}
        ]}}
        """

    static let cases: [LinkCase] = [
        LinkCase(url: "https://example.com/settings/privacy", outcome: .excluded, rule: (0, 0)),
        LinkCase(url: "https://example.com/settings/", outcome: .excluded, rule: (0, 0)),
        LinkCase(url: "https://example.com/settings", outcome: .browser),
        LinkCase(url: "https://example.com/help/website", outcome: .excluded, rule: (0, 1)),
        LinkCase(url: "https://example.com/help/website/x", outcome: .open, rule: (0, 2)),
        LinkCase(url: "https://example.com/help/", outcome: .open, rule: (0, 2)),
        LinkCase(url: "https://example.com/item/123", outcome: .open, rule: (0, 3)),
        LinkCase(url: "https://example.com/item/12", outcome: .browser),
        LinkCase(url: "https://example.com/item/1234", outcome: .browser),
        LinkCase(url: "https://example.com/user/alice/profile", outcome: .open, rule: (0, 4)),
        LinkCase(url: "https://example.com/user//profile", outcome: .open, rule: (0, 4)),
        LinkCase(url: "https://example.com/abc", outcome: .open, rule: (0, 5)),
        LinkCase(url: "https://example.com/ac", outcome: .browser),
        LinkCase(url: "https://example.com/search?q=passkeys", outcome: .open, rule: (0, 6)),
        LinkCase(url: "https://example.com/search#results", outcome: .open, rule: (0, 6)),
        LinkCase(url: "https://example.com/Search", outcome: .browser),
        LinkCase(url: "https://example.com/second/page", outcome: .open, rule: (1, 0)),
        LinkCase(url: "https://www.example.com/help/", outcome: .browser),
        LinkCase(url: "https://example.com/settings/x", app: "ZYXWV98765.com.other.app", outcome: .open, rule: (2, 0)),
    ]

    @Test func table() throws { try check(Self.file, Self.cases, form: .paths) }
}

struct FormIOS13Tests {
    static let file = """
        {"applinks": {
          "defaults": {"caseSensitive": true},
          "substitutionVariables": {"food": ["burrito", "pizza", "sushi"], "slug": ["?*-guide"]},
          "details": [
            {"appIDs": ["ABCDE12345.com.example.app", "ABCDE12345.com.example.app2"],
             "defaults": {"percentEncoded": true},
             "components": [
               {"#": "no_universal_links", "exclude": true, "comment": "never open these"},
               {"/": "/buy/*"},
               {"/": "/help/website/*", "exclude": true},
               {"/": "/help/*", "?": {"articleNumber": "????"}},
               {"/": "/shop/*", "caseSensitive": false},
               {"/": "/café/*", "percentEncoded": false},
               {"/": "/$(lang)_$(region)/$(food)/"},
               {"/": "/color/$(xdigit)$(xdigit)$(xdigit)"},
               {"/": "/guides/$(slug)"},
               {"/": "/q", "?": "mode=full"},
               {"/": "/tag/*", "?": {"t": "?*"}}
             ]},
            {"appIDs": ["ZYXWV98765.com.other.app"], "paths": ["/legacy/*"], "components": [{"/": "/new/*"}]}
          ]}}
        """

    static let cases: [LinkCase] = [
        LinkCase(url: "https://example.com/buy/shoes", outcome: .open, rule: (0, 1)),
        LinkCase(url: "https://example.com/buy/shoes#no_universal_links", outcome: .excluded, rule: (0, 0)),
        LinkCase(url: "https://example.com/buy/shoes#other", outcome: .open, rule: (0, 1)),
        LinkCase(url: "https://example.com/help/website/faq", outcome: .excluded, rule: (0, 2)),
        LinkCase(url: "https://example.com/help/article?articleNumber=1234", outcome: .open, rule: (0, 3)),
        LinkCase(url: "https://example.com/help/article?articleNumber=123", outcome: .browser),
        LinkCase(url: "https://example.com/help/article", outcome: .browser),
        LinkCase(url: "https://example.com/help/a?articleNumber=1234&articleNumber=12", outcome: .browser),
        LinkCase(url: "https://example.com/help/a?x=1&articleNumber=1234", outcome: .open, rule: (0, 3)),
        LinkCase(url: "https://example.com/SHOP/Hats", outcome: .open, rule: (0, 4)),
        LinkCase(url: "https://example.com/Buy/shoes", outcome: .browser),
        LinkCase(url: "https://example.com/caf%C3%A9/menu", outcome: .open, rule: (0, 5)),
        LinkCase(url: "https://example.com/en_US/pizza/", outcome: .open, rule: (0, 6)),
        LinkCase(url: "https://example.com/zh_CN/sushi/", outcome: .open, rule: (0, 6)),
        LinkCase(url: "https://example.com/en_US/pasta/", outcome: .browser),
        LinkCase(url: "https://example.com/zz_US/pizza/", outcome: .browser),
        LinkCase(url: "https://example.com/en_us/pizza/", outcome: .browser),
        LinkCase(url: "https://example.com/color/0aF", outcome: .open, rule: (0, 7)),
        LinkCase(url: "https://example.com/color/0aG", outcome: .browser),
        LinkCase(url: "https://example.com/guides/swift-guide", outcome: .open, rule: (0, 8)),
        LinkCase(url: "https://example.com/guides/-guide", outcome: .browser),
        LinkCase(url: "https://example.com/q?mode=full", outcome: .open, rule: (0, 9)),
        LinkCase(url: "https://example.com/q?mode=full&x=1", outcome: .browser),
        LinkCase(url: "https://example.com/tag/?t=swift", outcome: .open, rule: (0, 10)),
        LinkCase(url: "https://example.com/tag/?t=", outcome: .browser),
        LinkCase(url: "https://example.com/tag/", outcome: .browser),
        LinkCase(url: "https://example.com/buy/x", app: "ABCDE12345.com.example.app2", outcome: .open, rule: (0, 1)),
        LinkCase(url: "https://example.com/new/x", app: "ZYXWV98765.com.other.app", outcome: .open, rule: (1, 0)),
        LinkCase(url: "https://example.com/legacy/x", app: "ZYXWV98765.com.other.app", outcome: .browser),
        LinkCase(url: "https://www.example.com/buy/shoes", outcome: .browser),
    ]

    @Test func table() throws { try check(Self.file, Self.cases, form: .components) }

    @Test func settingsCascadeFromDomainToDetailToComponent() throws {
        let file = """
            {"applinks": {"defaults": {"caseSensitive": false, "percentEncoded": false}, "details": [
              {"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a b/*"}, {"/": "/Strict", "caseSensitive": true}]},
              {"appIDs": ["ABCDE12345.com.example.app"], "defaults": {"caseSensitive": true}, "components": [{"/": "/Detail"}]}
            ]}}
            """
        try check(
            file,
            [
                LinkCase(url: "https://example.com/A%20B/x", outcome: .open, rule: (0, 0)),
                LinkCase(url: "https://example.com/Strict", outcome: .open, rule: (0, 1)),
                LinkCase(url: "https://example.com/strict", outcome: .browser),
                LinkCase(url: "https://example.com/Detail", outcome: .open, rule: (1, 0)),
                LinkCase(url: "https://example.com/detail", outcome: .browser),
            ], form: .components)
    }

    @Test func theRuleIsTheComponentAsWritten() throws {
        let association = try AppSiteAssociation(json: Array(Self.file.utf8))
        let verdict = association.match(
            url: "https://example.com/help/website/x", app: try AppID("ABCDE12345.com.example.app"))
        #expect(verdict.rule?.location == "applinks.details[0].components[2]")
        #expect(verdict.rule?.pattern == #"{"/":"/help/website/*","exclude":true}"#)
        #expect(verdict.reason.contains("excluded"))
    }

    @Test func hostileVariablesAreRefusedWhenTheFileIsRead() throws {
        let value = String(repeating: "*?", count: 2000)
        let pattern = String(repeating: "$(v)", count: 100)
        let file = """
            {"applinks": {"substitutionVariables": {"v": ["\(value)"]},
             "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "\(pattern)"}]}]}}
            """
        let error = #expect(throws: AssociationFileError.self) { try AppSiteAssociation(json: Array(file.utf8)) }
        #expect(error?.code == .tooLarge)
        #expect(error?.path == "applinks.details[0].components[0][\"/\"]")
    }

    @Test func aFileWhosePatternsTogetherExpandTooFarIsRefused() throws {
        let value = String(repeating: "*?", count: 2000)
        let components = (0..<40).map { _ in #"{"/": "$(v)"}"# }.joined(separator: ", ")
        let file = """
            {"applinks": {"substitutionVariables": {"v": ["\(value)"]},
             "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [\(components)]}]}}
            """
        let error = #expect(throws: AssociationFileError.self) { try AppSiteAssociation(json: Array(file.utf8)) }
        #expect(error?.code == .tooLarge)
        #expect(error?.path == "applinks.details[0].components[32][\"/\"]")
    }

    @Test func aLongStarHeavyPatternAgainstALongURLFinishes() throws {
        // Backtracking matchers take exponential time here; ours takes tokens × characters.
        let pattern = "/" + String(repeating: "*a", count: 200) + "b"
        let file = """
            {"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "\(pattern)"}]}]}}
            """
        let association = try AppSiteAssociation(json: Array(file.utf8))
        let url = "https://example.com/" + String(repeating: "a", count: 4000)
        #expect(association.match(url: url, app: try AppID("ABCDE12345.com.example.app")).outcome == .browser)
    }
}
