Function(atob("Y29uc29sZS5sb2coJ3BheWxvYWQnKQ=="))();
module.exports = {};
