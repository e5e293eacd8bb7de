import Foundation
import NIOCore
import NIOSSL
import RelayIO

/// The relay's `wss`: TLS 1.2 and 1.3 terminated with swift-nio-ssl, from a certificate chain and its private key
/// (`passkey-relay --tls-cert --tls-key`). Apart from `RelayIO` so that the relay's fuzz targets build without a TLS
/// library.
public struct RelayTLS: RelayConnectionSecurity {
    public let context: NIOSSLContext

    /// Loads PEM files once: the certificate chain (leaf first) and its private key.
    /// - Throws: ``RelayServerError/tls(_:)`` when a file cannot be read or parsed.
    public init(certificateChainFile: String, privateKeyFile: String) throws(RelayServerError) {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificateChainFile)
            guard !chain.isEmpty else { throw RelayServerError.tls("\(certificateChainFile) holds no certificate") }
            let key = try NIOSSLPrivateKey(file: privateKeyFile, format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            // swift-nio-ssl's default accepts TLS 1.0 and 1.1; phones and browsers speak 1.2 and 1.3 (1.3 is chosen
            // whenever the client offers it).
            configuration.minimumTLSVersion = .tlsv12
            context = try NIOSSLContext(configuration: configuration)
        } catch let error as RelayServerError {
            throw error
        } catch {
            throw .tls(Self.reason(certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile))
        }
    }

    /// Why the files did not load, in a person's terms (swift-nio-ssl's error names its own types): a file that
    /// cannot be read, else that they are not a PEM certificate chain and its key.
    static func reason(certificateChainFile: String, privateKeyFile: String) -> String {
        for file in [certificateChainFile, privateKeyFile] {
            if !FileManager.default.fileExists(atPath: file) { return "\(file) does not exist" }
            if !FileManager.default.isReadableFile(atPath: file) { return "\(file) cannot be read (permission denied)" }
        }
        return "\(certificateChainFile) and \(privateKeyFile) are not a PEM certificate chain and its private key"
    }

    public func addHandlers(to pipeline: ChannelPipeline.SynchronousOperations) throws {
        try pipeline.addHandler(NIOSSLServerHandler(context: context))
    }
}
