import AssociatedDomains

/// The associated-domains readers: the apple-app-site-association file with universal-link matching, Android's
/// assetlinks.json, and the Smart App Banner tag.
enum DomainsTargets {
    static let iOS13File = """
        {"applinks": {"defaults": {"caseSensitive": false},
          "substitutionVariables": {"food": ["pizza", "su?hi", "*-bowl"]},
          "details": [{"appIDs": ["ABCDE12345.com.example.app"], "defaults": {"percentEncoded": false},
            "components": [
              {"#": "nope", "exclude": true},
              {"/": "/$(lang)_$(region)/$(food)/*", "?": {"id": "$(digit)?*"}},
              {"/": "/buy/*", "?": "a=*&b=?", "percentEncoded": true, "comment": "c"},
              {"/": "/x$(alnum)$(xdigit)$(upper)$(lower)$(alpha)"}]}]},
         "webcredentials": {"apps": ["ABCDE12345.com.example.app"]},
         "appclips": {"apps": ["ABCDE12345.com.example.app.Clip"]}}
        """
    static let iOS9File = """
        {"applinks": {"apps": [], "details": [
          {"appID": "ABCDE12345.com.example.app", "paths": ["NOT /settings/*", "/a?c/*/d", "*"]},
          {"appID": "ZYXWV98765.com.other", "paths": ["/x"]}]},
         "activitycontinuation": {"apps": ["ABCDE12345.com.example.app"]}}
        """
    static let file2015 = """
        {"applinks": {"apps": [], "details": {"ABCDE12345.com.example.app": {"paths": ["/wwdc/news/", "/v/*"]}}}}
        """
    static let urls = """
        https://example.com/en_US/pizza/1?id=12
        https://EXAMPLE.com/buy/x?a=1&b=2#nope
        https://example.com/caf%C3%A9/x?id=%31
        https://www.example.com:8443/settings/x
        https://example.com/abc/q/d
        http://example.com/v/1
        https://example.com/xa0Zb?
        """

    static let aasa: FuzzTarget = FuzzTarget(
        name: "aasa",
        summary: "an apple-app-site-association file (a chunk) and URLs (a line each): verdicts name rules of the app",
        seeds: {
            [iOS13File, iOS9File, file2015, #"{"webcredentials": {"apps": [1]}}"#].map {
                FuzzInput.chunks([Array($0.utf8)]) + Array(urls.utf8)
            }
        },
        run: { input in
            var reader = FuzzInput(input)
            guard let association = try? AppSiteAssociation(json: reader.chunk() ?? []) else { return }
            var apps: [AppID] = []
            for service in AssociatedService.allCases {
                for text in association.apps(for: service).prefix(4) {
                    guard let app = try? AppID(text) else { continue }
                    expect(association.names(app: app, for: service), "\(app) listed for \(service) but not named")
                    expect(association.reasonNotNamed(app: app, for: service) == nil, "a reason for a named app")
                    apps.append(app)
                }
            }
            let stranger = try! AppID("ZZZZZ00000.org.stranger")
            if !association.names(app: stranger, for: .webcredentials) {
                expect(association.reasonNotNamed(app: stranger, for: .webcredentials) != nil, "no reason given")
            }
            apps.append(stranger)
            let details = association.applinks?.details ?? []
            for line in reader.rest().split(separator: UInt8(ascii: "\n")).prefix(16) {
                let url = String(decoding: line, as: UTF8.self)
                for app in apps.prefix(6) {
                    let verdict = association.match(url: url, app: app)
                    expect(verdict == association.match(url: url, app: app), "matching is not deterministic")
                    guard let rule = verdict.rule else {
                        expect(verdict.outcome == .browser, "\(verdict.outcome) without a rule")
                        continue
                    }
                    expect(verdict.outcome != .browser, "a browser verdict names a rule")
                    expect(details.indices.contains(rule.detail), "rule names detail \(rule.detail)")
                    let detail = details[rule.detail]
                    expect(detail.appIDs.contains(app.description), "the deciding detail does not name \(app)")
                    expect(detail.form == rule.form, "the rule's form is not its detail's")
                    let count = detail.form == .components ? detail.components.count : detail.paths.count
                    expect((0..<count).contains(rule.index), "rule index \(rule.index) of \(count)")
                    if detail.form == .components {
                        expect(
                            (verdict.outcome == .excluded) == detail.components[rule.index].exclude,
                            "excluded without exclude")
                    }
                    // The host check: the same link from another domain's file opens nothing.
                    guard (try? LinkURL(url))?.host != "elsewhere.invalid" else { continue }
                    let elsewhere = association.match(url: url, app: app, domain: "elsewhere.invalid")
                    expect(elsewhere.outcome == .browser && elsewhere.rule == nil, "a link matched another domain")
                }
            }
        })

    static let assetLinks: FuzzTarget = FuzzTarget(
        name: "assetlinks",
        summary:
            "an assetlinks.json statement list: every android_app statement grants its relations to its certificates",
        seeds: {
            let print = String(repeating: "14:", count: 31) + "E5"
            return [
                """
                [{"relation": ["delegate_permission/common.get_login_creds", "delegate_permission/common.handle_all_urls"],
                  "target": {"namespace": "android_app", "package_name": "com.example",
                             "sha256_cert_fingerprints": ["\(print)", "\(print.lowercased())"]}},
                 {"relation": ["delegate_permission/common.get_login_creds"],
                  "target": {"namespace": "web", "site": "https://example.com"}},
                 {"include": "https://example.com/other.json"}]
                """,
                #"[{"relation": [], "target": {"namespace": "android_app", "package_name": "a", "sha256_cert_fingerprints": ["AB"]}}]"#,
            ].map { Array($0.utf8) }
        },
        run: { input in
            guard let links = try? AssetLinks(json: input) else { return }
            for statement in links.statements.prefix(32) {
                switch statement.target {
                case .androidApp(let name, let prints):
                    for print in prints.prefix(4) {
                        expect(print.count == 32, "a fingerprint of \(print.count) bytes")
                        expect(
                            (try? AssetLinks.fingerprint(AssetLinks.fingerprintText(print))) == print,
                            "a fingerprint does not round-trip")
                        for relation in statement.relations.prefix(4) {
                            expect(links.grants(relation, packageName: name, fingerprint: print), "grant not found")
                        }
                    }
                case .web(let site):
                    for relation in statement.relations.prefix(4) {
                        expect(links.grants(relation, site: site), "web grant not found for \(site)")
                    }
                case .other: break
                }
            }
        })

    static let banner: FuzzTarget = FuzzTarget(
        name: "smart-app-banner",
        summary: "an HTML page: a banner read from it has an all-digit app-id and only the first tag counts",
        seeds: {
            [
                #"<html><head><!-- x --><script>"<meta"</script><meta name="apple-itunes-app" content="app-id=640199958, app-argument=https://e.example/a,b, affiliate-data=x&amp;y, z=1"></head>"#,
                "<META NAME=apple-itunes-app CONTENT='app-id=1'><meta name=\"apple-itunes-app\" content=\"app-id=2\">",
                "<meta name=\"apple-itunes-app\" content=\"app-id=&#x31;&#50;\"",
            ].map { Array($0.utf8) }
        },
        run: { input in
            guard let banner = try? SmartAppBanner(html: input) else { return }
            expect(!banner.appID.isEmpty && banner.appID.utf8.allSatisfy { (0x30...0x39).contains($0) }, "bad app-id")
            expect(banner.tagCount >= 1, "a banner from no tag")
        })
}
