import JSON
import PasskeyProvider
import Testing

@testable import TerminalIO

/// What `import`, `export` and `scan` print, as text and with `--json` (Docs/CommandLine.md, "JSON output").
struct ExchangeAndScanLinesTests {
    func text(_ value: JSONValue) -> String { String(decoding: value.serialized(), as: UTF8.self) }

    @Test func anImportIsOneLineOrOneObject() {
        let imported = ExchangeService.Imported(added: 2, skippedDuplicates: 1, otherTypes: 1, wasClearText: true)
        #expect(
            ExchangeLines.importSummary(imported)
                == "Imported 2 passkeys; skipped 1 already in the store; skipped 1 credential not carried (named above)."
        )
        let logins = ExchangeService.Imported(
            added: 1, skippedDuplicates: 0, otherTypes: 0, wasClearText: true, passwordsAdded: 3,
            passwordsAlreadyPresent: 1, oneTimeCodesAdded: 1, oneTimeCodesAlreadyPresent: 0)
        #expect(
            ExchangeLines.importSummary(logins)
                == "Imported 1 passkey, 3 saved passwords and 1 one-time code; skipped 1 already in the store.")
        #expect(
            ExchangeLines.importSummary(.init(added: 1, skippedDuplicates: 0, otherTypes: 0, wasClearText: false))
                == "Imported 1 passkey.")
        #expect(
            text(ExchangeLines.importJSON(imported))
                == #"{"added":2,"clearText":true,"oneTimeCodesAdded":0,"oneTimeCodesAlreadyPresent":0,"#
                + #""passwordsAdded":0,"passwordsAlreadyPresent":0,"skippedDuplicates":1,"skippedOtherTypes":1}"#)
    }

    @Test func anExportSaysHowItWasSealedAndWhatItLeftOut() {
        var exported = ExchangeService.Exported(
            bytes: nil, count: 3, singleDevice: 1, passwordsLeftOut: 2, sealedWith: .importerKey(fingerprint: "AB12"))
        #expect(
            ExchangeLines.exportSummary(exported, output: "out.json")
                == "exported 3 passkeys sealed to the importer key AB12 to out.json; left out 1 single-device "
                + "(BE = 0); left out 2 saved passwords or codes that fail their integrity check")
        #expect(
            text(ExchangeLines.exportJSON(exported, output: "out.json"))
                == #"{"exported":3,"file":"out.json","oneTimeCodes":0,"passwords":0,"passwordsLeftOut":2,"#
                + #""sealedWith":{"importerKey":"AB12"},"#
                + #""singleDeviceLeftOut":1}"#)
        exported.sealedWith = .archive(kdf: "scrypt", mebibytes: 64)
        exported.singleDevice = 0
        exported.passwordsLeftOut = 0
        exported.passwords = 2
        exported.oneTimeCodes = 1
        #expect(
            ExchangeLines.exportSummary(exported, output: nil)
                == "exported 3 passkeys, 2 saved passwords, 1 one-time code in a passphrase archive (scrypt, 64 MiB)")
        #expect(
            text(ExchangeLines.exportJSON(exported, output: "b.cxf"))
                == #"{"exported":3,"file":"b.cxf","oneTimeCodes":1,"passwords":2,"passwordsLeftOut":0,"#
                + #""sealedWith":{"archive":{"kdf":"scrypt","memoryMebibytes":64}},"singleDeviceLeftOut":0}"#)
    }

    @Test func anImporterKeyNamesItsFilesAndFingerprint() {
        #expect(
            text(ExchangeLines.importerKeyJSON(fingerprint: "AB12", privateKey: "k.jwk", publicKey: "k.pub.jwk"))
                == #"{"fingerprint":"AB12","privateKey":"k.jwk","publicKey":"k.pub.jwk"}"#)
    }

    @Test func aScanSaysHowManyRequestsItAnsweredAndTheLinkItKept() {
        #expect(text(PhoneLines.scanJSON(.init(answered: 1, linkID: nil))) == #"{"answered":1}"#)
        #expect(
            text(PhoneLines.scanJSON(.init(answered: 2, linkID: [0x01, 0xAB])))
                == #"{"answered":2,"linkId":"01ab"}"#)
    }

    @Test func quietAndVerboseAreOneLevel() {
        #expect(OutputLevel(quiet: false, verbose: false) == .normal)
        #expect(OutputLevel(quiet: true, verbose: false, environment: ["PASSKEY_VERBOSE": "1"]) == .quiet)
        #expect(OutputLevel(quiet: false, verbose: true) == .verbose)
        #expect(OutputLevel(quiet: false, verbose: false, environment: ["PASSKEY_VERBOSE": "1"]) == .verbose)
        #expect(OutputLevel(quiet: false, verbose: false, environment: ["PASSKEY_VERBOSE": "0"]) == .normal)
        #expect(!OutputLevel.quiet.showsProgress && !OutputLevel.quiet.showsDetails)
        #expect(OutputLevel.normal.showsProgress && !OutputLevel.normal.showsDetails)
        #expect(OutputLevel.verbose.showsProgress && OutputLevel.verbose.showsDetails)
        #expect(OutputLevel.quiet < .normal && .normal < .verbose)
    }
}
