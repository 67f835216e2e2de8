require "net/http"
require "json"
class ApiClient
  def initialize(token = ENV["API_TOKEN"]) @token = token end
  def get(path)
    uri = URI("https://api.example.com" + path)
    req = Net::HTTP::Get.new(uri)
    req["Authorization"] = "Bearer #{@token}"
    JSON.parse(Net::HTTP.start(uri.host, uri.port, use_ssl: true) { |h| h.request(req) }.body)
  end
end
