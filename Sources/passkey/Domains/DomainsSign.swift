import ArgumentParser
import AssociatedDomains
import Foundation
import PasskeyProvider
import SignedFilesIO

extension Passkey.Domains {
    struct Sign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign an apple-app-site-association file (CMS, application/pkcs7-mime).",
            discussion: """
                Makes what `openssl smime -sign -nodetach -outform DER` makes: CMS SignedData holding the file, \
                signed with the domain's TLS certificate and key (PEM, the key unencrypted), carrying the chain's \
                certificates. The file must be a valid apple-app-site-association. Serve the result as \
                application/pkcs7-mime; `passkey domains check` verifies it. Writes to --output (never replacing a \
                file), or to standard output when it is not a terminal.
                """
        )

        @Option(
            help: ArgumentHelp("The signing certificate (PEM).", valueName: "file"),
            completion: .file(extensions: ["pem", "crt"])) var cert: String
        @Option(
            help: ArgumentHelp("Its private key (PEM, unencrypted).", valueName: "file"),
            completion: .file(extensions: ["pem", "crt"])) var key: String
        @Option(
            help: ArgumentHelp("Intermediate certificates to include (PEM).", valueName: "file"),
            completion: .file(extensions: ["pem", "crt"]))
        var chain: String?
        @Option(
            name: .shortAndLong, help: ArgumentHelp("Where to write the signed file.", valueName: "file"),
            completion: .file())
        var output: String?
        @Argument(help: ArgumentHelp("The apple-app-site-association JSON.", valueName: "file"), completion: .file())
        var file: String

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            if output == nil, isatty(STDOUT_FILENO) == 1 {
                throw CommandFailure(
                    "not writing a binary signed file to the terminal", hint: "Give --output FILE, or redirect.")
            }
            if let output, ExchangeService.exists(output) {
                throw CommandFailure("\(output) already exists; not replacing it")
            }
            let content = try ExchangeService.read(file, what: "the file")
            do {
                _ = try AppSiteAssociation(json: content)
            } catch {
                throw CommandFailure("\(file) is not a valid apple-app-site-association file: \(error)")
            }
            let signed: [UInt8]
            do {
                signed = try SignedFile.sign(
                    content, certificatePEM: ExchangeService.read(cert, what: "the certificate"),
                    privateKeyPEM: ExchangeService.read(key, what: "the private key"),
                    chainPEM: chain.map { try ExchangeService.read($0, what: "the chain") })
            } catch let error as SignedFileError {
                throw CommandFailure("cannot sign: \(error)")
            }
            if let output {
                try ExchangeService.writeNew(signed, to: output, mode: 0o644)
            } else {
                FileHandle.standardOutput.write(Data(signed))
            }
        }
    }
}
